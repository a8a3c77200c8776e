"""Browser tests: Debian's Chromium, driven headless by Playwright (no browser download).

The session starts Chromium from CHROMIUM (default /usr/bin/chromium) against a live
Django server on a free loopback port (pytest-django's live server, 127.0.0.1). When
Chromium or Playwright is missing the tests SKIP with a message saying so, unless
REQUIRE_REAL_SERVICES=1 (CI, .ci/run), where they FAIL.

Screenshots of what the tests look at are written to BROWSER_SCREENSHOTS (a directory;
default: the test's tmp_path), so a person can look at them.
"""

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
PASSWORD = "pw-for-browser-tests"


def _unavailable(reason: str):
    if os.environ.get("REQUIRE_REAL_SERVICES") == "1":
        pytest.fail(f"browser tests required (REQUIRE_REAL_SERVICES=1) but {reason}", pytrace=False)
    pytest.skip(f"browser tests skipped: {reason} (install Debian's chromium, or set CHROMIUM=/path)")


@pytest.fixture
def browser(site, monkeypatch):
    # Playwright's sync API keeps an event loop running in the test thread while it is open;
    # the test body's ORM calls are still synchronous, so Django's async-safety guard is
    # switched off for this test only (never process-wide: `check --deploy` refuses it).
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    if not (os.path.isfile(CHROMIUM) or shutil.which(CHROMIUM)):
        _unavailable(f"no Chromium at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (requirements-dev.txt)")
    with sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        except Exception as exc:  # noqa: BLE001  a broken install says why
            _unavailable(f"Chromium at {CHROMIUM} did not start: {exc}")
        yield browser
        browser.close()


@pytest.fixture
def site(live_server, transactional_db, settings):
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
    settings.DEBUG = False
    return live_server.url


@pytest.fixture
def shots(tmp_path):
    """Where screenshots go: BROWSER_SCREENSHOTS if set, else the test's tmp_path."""
    target = Path(os.environ.get("BROWSER_SCREENSHOTS") or tmp_path)
    target.mkdir(parents=True, exist_ok=True)
    return target


@pytest.fixture
def open_page(browser, site):
    """open_page(user=None, viewport=DESKTOP, javascript=True) -> a Playwright page, logged in as `user`."""
    contexts = []

    def make(user=None, *, viewport=None, javascript=True):
        context = browser.new_context(viewport=viewport or DESKTOP, java_script_enabled=javascript, base_url=site)
        context.set_default_timeout(10_000)
        contexts.append(context)
        page = context.new_page()
        if user is not None:
            page.goto("/accounts/login/")
            page.fill("input[name=login]", user.username)
            page.fill("input[name=password]", PASSWORD)
            page.click("main form button[type=submit]")
            page.wait_for_load_state()
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def person(django_user_model):
    def make(username, **fields):
        return django_user_model.objects.create_user(username=username, password=PASSWORD, **fields)
    return make


def csp_refusals(page) -> list[str]:
    """The Content-Security-Policy refusals Chromium reports on `page` from now on (console errors)."""
    refused = []
    page.on("console", lambda message: refused.append(message.text)
            if "Content Security Policy" in message.text else None)
    return refused
