"""The site's database connections: kept between requests (Django's persistent connections,
checked before reuse) and, on SQLite, in WAL mode, as `make serve` runs them."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.db import connection
db = settings.DATABASES["default"]
with connection.cursor() as cursor:
    mode = cursor.execute("PRAGMA journal_mode").fetchone()[0]
print(json.dumps({"max_age": db["CONN_MAX_AGE"], "health": db["CONN_HEALTH_CHECKS"], "mode": mode}))
"""


def test_the_production_settings_keep_connections_with_health_checks_and_sqlite_in_wal(tmp_path):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "cms_site.settings", "DEBUG": "0",
           "SECRET_KEY": "a-probe-only-key-0123456789abcdefghijklmnopqrstuvwxyz", "ALLOWED_HOSTS": "testserver",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "MONGODB_EMBEDDED_PATH": str(tmp_path / "m.sqlite3")}
    env.pop("DATABASE_CONN_MAX_AGE", None)
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {"max_age": 600, "health": True, "mode": "wal"}
