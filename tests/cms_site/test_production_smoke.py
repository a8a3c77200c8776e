"""The production configuration, started as `make serve` starts it: gunicorn on a free
loopback port, DEBUG off, collected static files served by WhiteNoise. Checks a page, a
static file, the API docs page (and its bundle from the sidecar package), a JSON 404 and
/healthz over real HTTP. About 10 s (collectstatic, migrate, gunicorn start)."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:  # noqa: S310 - loopback only
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not GUNICORN.exists():
        pytest.fail(f"gunicorn is not installed next to {sys.executable} (requirements.txt pins it)")
    tmp = tmp_path_factory.mktemp("prod")
    port = _free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "cms_site.settings", "DEBUG": "0", "HTTPS": "0",
           "SECRET_KEY": "smoke-test-secret-key-not-for-production-0123456789abcdefgh",
           "ALLOWED_HOSTS": "127.0.0.1", "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}",
           "STATIC_ROOT": str(tmp / "static"), "MONGODB_URI": "", "MONGODB_SNAPSHOT": "",
           "MONGODB_EMBEDDED_PATH": str(tmp / "var" / "embedded-mongo.sqlite3"),
           "PYTHONUNBUFFERED": "1"}
    env.pop("CELERY_BROKER_URL", None)
    for command in (["collectstatic", "--noinput", "-v", "0"], ["migrate", "--noinput", "-v", "0"]):
        subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env, check=True, timeout=120)
    log = open(tmp / "gunicorn.log", "w+")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([str(GUNICORN), "cms_site.wsgi:application", "--bind", f"127.0.0.1:{port}",
                             "--workers", "1", "--threads", "2", "--timeout", "30"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if _get(base + "/healthz")[0] in (200, 503):
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                pytest.fail("gunicorn did not start:\n" + log.read())
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_production_configuration_over_http(server):
    status, headers, body = _get(server + "/")
    assert status == 200 and b"<h1>Topics</h1>" in body
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    html = body.decode()
    css = html.split('href="/static/css/')[1].split('"')[0]
    assert css != "site.css" and css.startswith("site.") and css.endswith(".css")  # hashed by the manifest
    status, headers, body = _get(f"{server}/static/css/{css}")
    assert status == 200 and headers["Content-Type"].startswith("text/css") and b"{" in body
    assert "max-age=315360000" in headers.get("Cache-Control", "")  # WhiteNoise: immutable hashed file

    status, headers, body = _get(server + "/api/docs/")
    assert status == 200 and b"swagger-ui" in body and b"cdn" not in body.lower()
    bundle = body.decode().split('src="/static/drf_spectacular_sidecar/swagger-ui-dist/')[1].split('"')[0]
    assert _get(f"{server}/static/drf_spectacular_sidecar/swagger-ui-dist/{bundle}")[0] == 200

    status, headers, body = _get(server + "/api/no-such-endpoint/")
    assert status == 404 and headers["Content-Type"] == "application/json"
    assert json.loads(body)["code"] == "not_found"

    status, headers, body = _get(server + "/healthz")
    assert status == 200 and json.loads(body)["status"] == "ok"
