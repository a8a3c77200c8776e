"""Report (flag) a comment from the topic page: in place with JavaScript (the server's JSON
message beside the comment, no reload; past the limit, the wait), and without JavaScript
(a full round trip back to the comment, the message beside it), at 1280 and 390 px."""

import pytest

from comments import services
from tests.browser.conftest import DESKTOP, PHONE

pytestmark = pytest.mark.django_db(transaction=True)

THANKS = "Thank you: the editors will review this comment."


@pytest.fixture
def topic(make_topic):
    return make_topic("document", "chronological", title="Report topic")


def in_view(page, locator) -> bool:
    box = locator.bounding_box()
    size = page.viewport_size
    return box is not None and 0 <= box["y"] and box["y"] + box["height"] <= size["height"] \
        and 0 <= box["x"] and box["x"] + box["width"] <= size["width"]


def report(page, comment_id, reason="spam"):
    article = page.locator(f"#c-{comment_id}")
    article.locator("details.flag summary").click()
    article.locator("details.flag select[name=reason]").select_option(reason)
    article.locator("details.flag button[type=submit]").click()
    return article


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
@pytest.mark.parametrize("javascript", [True, False], ids=["in-place", "no-javascript"])
def test_report_a_comment_and_read_the_answer_beside_it(open_page, person, topic, shots, javascript, viewport):
    alice, bob = person("alice"), person("bob")
    comments = [services.comment_create(topic=topic, author=bob, text=f"Comment number {n}") for n in range(12)]
    target = comments[9]  # far enough down the page that the top of the page is out of view
    page = open_page(alice, javascript=javascript, viewport=viewport)
    page.goto(f"/t/{topic.slug}/")
    if javascript:
        page.evaluate("window.__stayed = true")
    page.locator(f"#c-{target.id}").scroll_into_view_if_needed()
    article = report(page, target.id)
    label = f"{'js' if javascript else 'nojs'}-{viewport['width']}"
    message = article.locator(".moderation-note", has_text=THANKS)
    message.wait_for()
    page.screenshot(path=str(shots / f"report-{label}.png"))
    assert in_view(page, message), message.bounding_box()
    if javascript:
        assert page.evaluate("window.__stayed === true")  # no reload
        assert article.locator("[role=status]", has_text=THANKS).count() == 1
        report(page, target.id, reason="abuse")
        article.locator(".moderation-note", has_text="You have already reported this comment.").wait_for()
    else:
        assert page.url.endswith(f"#c-{target.id}")
    widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], widths


def test_a_report_past_the_limit_shows_the_servers_message_and_wait(open_page, person, topic, settings):
    from django.core.cache import cache

    settings.RATE_LIMITS_ENABLED = True
    settings.RATE_LIMIT_RATES = {**settings.RATE_LIMIT_RATES, "flag": {"user": ["1/min"], "ip": ["60/min"]}}
    cache.clear()
    alice, bob = person("alice"), person("bob")
    first = services.comment_create(topic=topic, author=bob, text="Report me")
    second = services.comment_create(topic=topic, author=bob, text="And me")
    page = open_page(alice)
    page.goto(f"/t/{topic.slug}/")
    page.evaluate("window.__stayed = true")
    report(page, first.id).locator(".moderation-note", has_text=THANKS).wait_for()
    article = report(page, second.id)  # the second report in a minute: 429
    error = article.locator("details.flag [role=alert]")
    error.wait_for()
    assert "Too many requests: try again in" in error.inner_text() and "second" in error.inner_text()
    assert article.locator("details.flag button[type=submit]").is_disabled()
    assert page.evaluate("window.__stayed === true")
    cache.clear()
