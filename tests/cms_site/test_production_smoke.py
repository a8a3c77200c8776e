"""The production configuration, started as `make serve` starts it: gunicorn with uvicorn's
ASGI worker class on a free loopback port, DEBUG off, collected static files served by
WhiteNoise. Checks a page, a static file, the API docs page (and its bundle from the sidecar
package), a JSON 404 and /healthz over real HTTP; then a log-in through allauth's form (session
and CSRF), a comment posted through the page's form, the API with the session, and a topic's
live stream answering while a page is served beside it. About 15 s (collectstatic, migrate,
gunicorn start)."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
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
            return r.status, r.headers, r.read()  # case-insensitive names (HTTP: uvicorn sends them lower-case)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


SEED = """
from accounts.models import User
from topics.services import topic_create
editor = User.objects.create_user(username="smoke", password="smoke-password-0123", is_staff=True)
topic_create(author=editor, title="Smoke", slug="smoke", comment_storage="document", comment_order="chronological")
"""


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
    for command in (["collectstatic", "--noinput", "-v", "0"], ["migrate", "--noinput", "-v", "0"], ["mongo_indexes"],
                    ["shell", "-c", SEED]):
        subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env, check=True, timeout=120,
                       stdout=subprocess.DEVNULL)
    log = open(tmp / "gunicorn.log", "w+")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([str(GUNICORN), "cms_site.asgi:application", "--bind", f"127.0.0.1:{port}",
                             "--worker-class", "uvicorn_worker.UvicornWorker", "--workers", "1", "--timeout", "30"],
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


def test_sessions_csrf_allauth_the_api_and_a_live_stream_under_the_asgi_worker(server):
    import http.cookiejar
    import re

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

    def post(path, data):
        token = next(c.value for c in jar if c.name == "csrftoken")
        body = urllib.parse.urlencode({**data, "csrfmiddlewaretoken": token}).encode()
        request = urllib.request.Request(server + path, data=body, headers={"Referer": server + path})
        with opener.open(request, timeout=10) as r:
            return r.status, r.geturl(), r.read().decode()

    with opener.open(server + "/accounts/login/", timeout=10) as r:
        assert r.status == 200
    status, url, body = post("/accounts/login/", {"login": "smoke", "password": "smoke-password-0123"})
    assert status == 200 and "/accounts/login/" not in url  # signed in: allauth's form, the session, CSRF
    status, url, body = post("/t/smoke/comments/", {"text": "Posted under the ASGI worker"})
    assert status == 200 and "Posted under the ASGI worker" in body
    with opener.open(server + "/api/me/", timeout=10) as r:
        assert json.loads(r.read())["username"] == "smoke"  # DRF with the session
    live = urllib.request.urlopen(server + "/t/smoke/live/", timeout=10)  # noqa: S310 - loopback only
    try:
        assert live.status == 200 and live.headers["Content-Type"].startswith("text/event-stream")
        assert live.readline().startswith(b"retry: ")
        assert _get(server + "/t/smoke/")[0] == 200  # a page while the stream stays open
        assert re.search(rb"^id: ", live.readline() + live.readline(), re.MULTILINE)
    finally:
        live.close()
