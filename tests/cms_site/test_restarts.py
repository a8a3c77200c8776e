"""Restarts always work: the site started twice on the same data, as a user does it.

`make run` (migrate, mongo_indexes, rundemo), a comment posted over HTTP, Ctrl-C (SIGINT);
`make run` again on the same var/ and db.sqlite3 (the second mongo_indexes used to fail with
"Index with name: id_hashed already exists with different options"), the comment still
there, another one posted; then `make serve` (migrate, collectstatic, mongo_indexes,
load_demo, gunicorn with DEBUG off) on the same data, both comments there, SIGTERM.
Everything runs as subprocesses of manage.py in a temporary directory (DATABASE_URL,
MONGODB_EMBEDDED_PATH, STATIC_ROOT), on free loopback ports. About 30-40 s.

The embedded engine by default; with MONGODB_URI set the same steps run against that server
in a database of their own (dropped afterwards)."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.restarts

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")
TOPIC = "welcome-to-commons"  # a demo topic (demo/loader.py)
PASSWORD = "commons-demo"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _http(url: str, data: dict | None = None, token: str | None = None):
    headers = {"Accept": "application/json"}
    body = None
    if data is not None:
        body = json.dumps(data).encode()
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Token {token}"
    request = urllib.request.Request(url, data=body, headers=headers)  # noqa: S310 - loopback only
    try:
        with urllib.request.urlopen(request, timeout=20) as r:  # noqa: S310 - loopback only
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


class Site:
    """One checkout's data (a temporary directory) and the commands `make run` / `make serve` run on it."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.db_name = f"restarts_{uuid.uuid4().hex[:12]}"
        self.env = {**os.environ, "DJANGO_SETTINGS_MODULE": "cms_site.settings", "PYTHONUNBUFFERED": "1",
                    "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}",
                    "MONGODB_SNAPSHOT": str(tmp / "var" / "embedded-mongo.bson"), "MONGODB_DB": self.db_name,
                    "MONGODB_EMBEDDED_PATH": str(tmp / "var" / "embedded-mongo.sqlite3"),
                    "STATIC_ROOT": str(tmp / "static"), "ALLOWED_HOSTS": "127.0.0.1", "HTTPS": "0"}
        self.env.pop("CELERY_BROKER_URL", None)

    def manage(self, *args: str, debug: bool) -> str:
        env = self._env(debug)
        result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                                text=True, timeout=180)
        assert result.returncode == 0, f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    def _env(self, debug: bool) -> dict:
        env = dict(self.env, DEBUG="1" if debug else "0")
        if not debug:
            env["SECRET_KEY"] = "restart-test-secret-key-not-for-production-0123456789abcdef"
        return env

    def start(self, argv: list[str], *, debug: bool, name: str):
        log = open(self.tmp / f"{name}.log", "w+")  # noqa: SIM115 - closed in stop()
        proc = subprocess.Popen(argv, cwd=ROOT, env=self._env(debug), stdout=log, stderr=subprocess.STDOUT)
        return proc, log

    def wait_for_topic(self, base: str, proc, log) -> None:
        deadline = time.monotonic() + 120
        while True:
            try:
                if _http(f"{base}/t/{TOPIC}/")[0] == 200:
                    return
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"the site did not serve /t/{TOPIC}/:\n{log.read()[-4000:]}")
            time.sleep(0.2)

    @staticmethod
    def stop(proc, log, sig) -> str:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"the server did not stop on {sig!r}")
        log.seek(0)
        text = log.read()
        log.close()
        return text


def _count(base: str) -> int:
    status, body = _http(f"{base}/api/topics/{TOPIC}/comments/")
    assert status == 200, body
    return json.loads(body)["count"]


def _post(base: str, text: str) -> str:
    status, body = _http(f"{base}/api/auth/token/", {"username": "alice", "password": PASSWORD})
    assert status == 200, body
    token = json.loads(body)["token"]
    status, body = _http(f"{base}/api/topics/{TOPIC}/comments/", {"text": text}, token=token)
    assert status == 201, body
    return json.loads(body)["id"]


def _has(base: str, comment_id: str, text: str) -> bool:
    status, body = _http(f"{base}/api/topics/{TOPIC}/comments/{comment_id}/")
    return status == 200 and json.loads(body)["text"] == text


def _make_run(site: Site, name: str):
    """`make run`: migrate, mongo_indexes, rundemo (demo content, development server)."""
    site.manage("migrate", "--noinput", "-v", "0", debug=True)
    indexes = site.manage("mongo_indexes", debug=True)
    port = _free_port()
    proc, log = site.start([sys.executable, "manage.py", "rundemo", f"127.0.0.1:{port}"], debug=True, name=name)
    base = f"http://127.0.0.1:{port}"
    site.wait_for_topic(base, proc, log)
    return indexes, base, proc, log


@pytest.fixture
def site(tmp_path):
    site = Site(tmp_path)
    yield site
    if os.environ.get("MONGODB_URI"):
        import pymongo

        pymongo.MongoClient(os.environ["MONGODB_URI"]).drop_database(site.db_name)


def test_make_run_twice_then_make_serve_on_the_same_data(site):
    # First start: a fresh checkout.
    indexes, base, proc, log = _make_run(site, "run1")
    assert "created" in indexes and "Indexes of" in indexes.splitlines()[-1]
    before = _count(base)
    first_text = f"Written before the first restart {uuid.uuid4().hex}"
    first = _post(base, first_text)
    assert _count(base) == before + 1
    site.stop(proc, log, signal.SIGINT)  # Ctrl-C

    # Second start on the same data.
    indexes, base, proc, log = _make_run(site, "run2")
    report = indexes.splitlines()[-1]
    assert "exists" in report and "rebuilt" not in report and "created" not in report, indexes
    assert _has(base, first, first_text)
    assert _count(base) == before + 1  # the demo content is not loaded twice
    second_text = f"Written before make serve {uuid.uuid4().hex}"
    second = _post(base, second_text)
    site.stop(proc, log, signal.SIGINT)

    # `make serve` on the data `make run` used.
    if not GUNICORN.exists():
        pytest.fail(f"gunicorn is not installed next to {sys.executable} (requirements.txt pins it)")
    site.manage("migrate", "--noinput", "-v", "0", debug=False)
    site.manage("collectstatic", "--noinput", "-v", "0", debug=False)
    indexes = site.manage("mongo_indexes", debug=False)
    assert "rebuilt" not in indexes.splitlines()[-1], indexes
    site.manage("load_demo", debug=False)
    port = _free_port()
    proc, log = site.start([str(GUNICORN), "cms_site.wsgi:application", "--bind", f"127.0.0.1:{port}",
                            "--workers", "1", "--threads", "4", "--timeout", "30"], debug=False, name="serve")
    base = f"http://127.0.0.1:{port}"
    site.wait_for_topic(base, proc, log)
    assert _has(base, first, first_text) and _has(base, second, second_text)
    assert _count(base) == before + 2
    site.stop(proc, log, signal.SIGTERM)


def test_rundemo_as_the_docs_write_it_serves_pages_with_debug_off(site):
    """`.venv/bin/python manage.py rundemo` after `make run` runs with DEBUG off (no DEBUG in the
    environment; the key from the site's key file), as `make run` does against a MongoDB server:
    its pages name their static files by the manifest, which it collects first."""
    site.manage("migrate", "--noinput", "-v", "0", debug=True)
    site.manage("mongo_indexes", debug=True)
    port = _free_port()
    proc, log = site.start([sys.executable, "manage.py", "rundemo", f"127.0.0.1:{port}"], debug=False, name="nodebug")
    base = f"http://127.0.0.1:{port}"
    try:
        site.wait_for_topic(base, proc, log)
        status, body = _http(f"{base}/")
        assert status == 200 and b"<h1>Topics</h1>" in body
        css = re.search(rb'href="(/static/[^"]+\.css)"', body)
        assert css and _http(base + css.group(1).decode())[0] == 200  # served by WhiteNoise
    finally:
        site.stop(proc, log, signal.SIGINT)

