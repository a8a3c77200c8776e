"""Production serving in process: JSON errors under /api/, CSP, API docs from the package,
/healthz, MongoDB outages as fast 503s that recover by themselves, and `check --deploy`."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from core import mongo

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def test_unknown_api_paths_and_methods_are_json(client, make_user):
    for path in ("/api/nope/", "/api/topics/a/b/c/d/e/", "/api/"):
        r = client.get(path)
        assert r.status_code == 404 and r["Content-Type"] == "application/json", path
        assert r.json()["code"] == "not_found" and r.json()["detail"]
    client.force_login(make_user())
    r = client.delete("/api/topics/")
    assert r.status_code == 405 and r.json()["detail"]
    assert client.get("/no-such-page/").status_code == 404


def test_an_unexpected_error_under_api_is_a_json_500(monkeypatch, make_topic):
    from topics import selectors

    make_topic()

    def boom(**kwargs):
        raise RuntimeError("unexpected")

    monkeypatch.setattr(selectors, "topic_page", boom)
    client = Client(raise_request_exception=False)
    r = client.get("/api/topics/")
    assert r.status_code == 500 and r.json() == {"detail": "Internal server error.", "code": "server_error"}
    page = client.get("/")
    assert page.status_code == 500 and "application/json" not in page["Content-Type"]


def test_content_security_policy_and_docs_from_the_package(client):
    page = client.get("/")
    policy = page["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "object-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy.split("style-src")[0]
    assert "img-src 'self' https:;" in policy  # no data: images on the site's pages
    for path in ("/api/docs/", "/api/redoc/"):
        docs = client.get(path)
        html = docs.content.decode()
        assert docs.status_code == 200 and "drf_spectacular_sidecar" in html, path
        assert "cdn" not in html.lower() and "unpkg" not in html and "googleapis" not in html, path
        assert "script-src 'self'" in docs["Content-Security-Policy"]
        assert "img-src 'self' data:;" in docs["Content-Security-Policy"], path  # nothing from another site
    init = client.get("/api/docs/?script=")  # Swagger UI's start-up script: a file, not inline
    assert init.status_code == 200 and "SwaggerUIBundle" in init.content.decode()


def test_healthz(client):
    r = client.get("/healthz")
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "database": "ok", "mongodb": "ok", "mongodb_engine": "embedded"}
    assert "no-cache" in r["Cache-Control"] or "max-age=0" in r["Cache-Control"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed once the with-block ends: nothing listens there


def test_mongodb_outage_is_a_503_and_the_site_recovers(client, settings, make_topic):
    topic = make_topic()
    settings.MONGODB_URI = f"mongodb://127.0.0.1:{_closed_port()}/"
    settings.MONGODB_SERVER_SELECTION_TIMEOUT_MS = 200
    settings.MONGODB_CONNECT_TIMEOUT_MS = 200
    try:
        api = client.get(f"/api/topics/{topic.slug}/comments/")
        assert api.status_code == 503 and api.json()["code"] == "mongodb_unavailable" and api["Retry-After"]
        page = client.get(topic.get_absolute_url())
        assert page.status_code == 503 and b"Back in a moment" in page.content and b"site.css" in page.content
        health = client.get("/healthz")
        assert health.status_code == 503 and health.json()["mongodb"].startswith("error")
        assert health.json()["database"] == "ok"
    finally:
        mongo.close_client(settings.MONGODB_URI)
        settings.MONGODB_URI = ""
    # The server is back (here: the embedded engine again): the next request succeeds.
    assert client.get(f"/api/topics/{topic.slug}/comments/").status_code == 200
    assert client.get("/healthz").status_code == 200


def test_the_same_client_recovers_when_a_server_answers_again(client, settings, make_topic):
    """The outage as production meets it: the same URI, the same pymongo client, no restart.
    Nothing listens (503), then a server answers on that port (a wire-protocol stand-in:
    tests/cms_site/wire_standin.py), then it goes away again (503 once more)."""
    from tests.cms_site.wire_standin import StandIn

    topic = make_topic()
    port = _closed_port()
    uri = f"mongodb://127.0.0.1:{port}/?directConnection=true"
    settings.MONGODB_URI = uri
    # Above pymongo's minimum heartbeat interval (500 ms): a request that starts after the
    # server is back gets a fresh check within its selection timeout, so it must succeed.
    settings.MONGODB_SERVER_SELECTION_TIMEOUT_MS = 1000
    settings.MONGODB_CONNECT_TIMEOUT_MS = 300
    standin = None
    try:
        assert client.get("/healthz").status_code == 503
        assert client.get(f"/api/topics/{topic.slug}/comments/").status_code == 503
        used = mongo.get_client()
        standin = StandIn(port)
        health = client.get("/healthz")
        assert health.status_code == 200 and health.json()["mongodb"] == "ok", health.content
        api = client.get(f"/api/topics/{topic.slug}/comments/")
        assert api.status_code == 200 and api.json()["count"] == 0  # the stand-in holds no comments
        assert mongo.get_client() is used  # recovered by itself: the same client, nothing re-created
        assert "ping" in standin.commands and "find" in standin.commands
        standin.stop()
        standin = None
        assert client.get("/healthz").status_code == 503
        assert client.get(f"/api/topics/{topic.slug}/comments/").json()["code"] == "mongodb_unavailable"
    finally:
        if standin is not None:
            standin.stop()
        mongo.close_client(uri)
        settings.MONGODB_URI = ""


def test_check_deploy_is_clean_under_production_settings(tmp_path):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "cms_site.settings", "DEBUG": "0", "HTTPS": "1",
           "SECRET_KEY": "k3J9-production-like-secret-key-for-the-deploy-check-0123456789abcdef",
           "ALLOWED_HOSTS": "commons.example.org", "SITE_URL": "https://commons.example.org",
           "CACHE_URL": "redis://redis.internal:6379/1",  # workers share their rate-limit counts (core.W003)
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
           "MONGODB_SNAPSHOT": "", "MONGODB_EMBEDDED_PATH": ""}
    r = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no issues" in r.stdout
