"""At 390 px a profile and a feed never scroll sideways, whatever a comment's text (a
400-letter word in an activity excerpt), and the profile's counts and buttons keep whole
words. Debian's Chromium through Playwright on a live server; skipped with a message
without Chromium, failing under REQUIRE_REAL_SERVICES=1."""

import os
import shutil

import pytest

from comments import services as comment_services
from social.services import follow_create

pytestmark = pytest.mark.django_db(transaction=True)

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
LONG_WORD = "Supercalifragilistic" * 20


@pytest.fixture
def browser(monkeypatch):
    if not os.path.exists(CHROMIUM):
        if os.environ.get("REQUIRE_REAL_SERVICES") == "1":
            pytest.fail(f"Chromium not found at {CHROMIUM} and REQUIRE_REAL_SERVICES=1")
        pytest.skip(f"Chromium not found at {CHROMIUM}: set CHROMIUM=/path to run the phone-width test")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the ORM calls of the test are plain sync code.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def test_profile_and_feed_fit_a_phone(live_server, browser, make_user, make_topic, client):
    alice, bob = make_user("alice"), make_user("bob")
    follow_create(follower=bob, followee=alice)
    topic = make_topic()
    comment_services.comment_create(topic=topic, author=alice, text=f"{LONG_WORD} and https://example.com/{'x' * 300}")
    client.force_login(bob)
    session = client.cookies["sessionid"].value
    context = browser.new_context(viewport={"width": 390, "height": 844})
    context.add_cookies([{"name": "sessionid", "value": session, "url": live_server.url}])
    page = context.new_page()
    for path in ("/u/alice/", "/feed/"):
        page.goto(live_server.url + path)
        assert "Supercalifragilistic" in page.content(), path
        width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert width[0] <= width[1], (path, width)
    page.goto(live_server.url + "/u/alice/")
    # Whole words: "followers" on one line (a broken label is taller than one line of text).
    heights = page.evaluate("""Array.from(document.querySelectorAll('.counts > a, .counts button'))
        .map(e => [e.textContent.trim(), e.getBoundingClientRect().height,
                   parseFloat(getComputedStyle(e).lineHeight) || 24])""")
    assert heights and all(h <= 2 * line for _, h, line in heights), heights
    context.close()
