"""An operator's `.venv/bin/python manage.py COMMAND` works as the docs write it, in a site set up
as `make run` or `make serve` sets one up: with neither DEBUG nor SECRET_KEY in the environment
the settings read the key file those targets write (`.secret_key`, SECRET_KEY_FILE here), and a
command that runs tasks with no broker prints no stray "No hostname was supplied" from kombu.
Run as subprocesses, each on its own throw-away databases."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "imports" / "fixtures" / "disqus.xml"


def _env(tmp: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in {"DEBUG", "SECRET_KEY", "SECRET_KEY_FILE", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE"}}
    env.update({"DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}", "MONGODB_URI": "", "MONGODB_SNAPSHOT": "",
                "MONGODB_EMBEDDED_PATH": str(tmp / "var" / "embedded-mongo.sqlite3"),
                "SECRET_KEY_FILE": str(tmp / ".secret_key"), **extra})
    return env


def _manage(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def test_a_command_reads_the_key_file_and_says_what_to_do_without_one(tmp_path):
    env = _env(tmp_path)
    missing = _manage(env, "check")
    assert missing.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in missing.stderr
    assert str(tmp_path / ".secret_key") in missing.stderr and "DEBUG=1" in missing.stderr
    (tmp_path / ".secret_key").write_text("key-file-written-as-make-serve-writes-it-0123456789abcdef\n")
    done = _manage(env, "check")
    assert done.returncode == 0, done.stderr
    assert "System check identified no issues" in done.stdout


def test_an_import_that_runs_tasks_prints_no_broker_warning(tmp_path):
    env = _env(tmp_path, DEBUG="1", DJANGO_SUPERUSER_PASSWORD="operator-password-0123")
    for args in (["migrate", "--noinput", "-v", "0"], ["mongo_indexes"],
                 ["createsuperuser", "--noinput", "--username", "operator", "--email", "op@example.org"]):
        step = _manage(env, *args)
        assert step.returncode == 0, step.stderr
    done = _manage(env, "comments_import", "disqus", str(FIXTURE))
    assert done.returncode == 0, done.stderr
    assert "7 imported" in done.stdout
    assert "No hostname was supplied" not in done.stdout + done.stderr
