"""The "N new comments" notice in Chromium: another user posts while I read; the notice says
so without a reload and shows the comment when asked, at 1280 and 390 px."""

import pytest

from comments import services
from tests.browser.conftest import DESKTOP, PHONE

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("viewport,name", [(DESKTOP, "desktop"), (PHONE, "phone")])
def test_the_new_comments_notice_appears_when_another_user_posts(open_page, person, make_topic, shots, settings,
                                                                 viewport, name):
    settings.COMMENTS_POLL_SECONDS = 1  # the page asks every second here (30 by default)
    settings.COMMENTS_LIVE = False  # without live updates (or when the stream fails) the page polls
    alice, bob = person("alice"), person("bob")
    topic = make_topic("document", "threaded", title="Live discussion")
    root = services.comment_create(topic=topic, author=alice, text="First, by alice")
    page = open_page(alice, viewport=viewport)
    page.goto(f"/t/{topic.slug}/")
    page.evaluate("window.__stayed = true")
    assert page.locator(".new-notice").is_hidden()
    services.comment_create(topic=topic, author=bob, text="Bob **replies** while alice reads", parent=root.id)
    services.comment_create(topic=topic, author=bob, text="And once more")
    notice = page.locator(".new-notice button")
    notice.wait_for(state="visible")
    assert notice.inner_text().startswith("2 new comments")
    page.screenshot(path=str(shots / f"new-comments-notice-{name}.png"), full_page=False)
    notice.click()
    shown = page.locator(".new-list article.comment")
    assert shown.count() == 2 and shown.nth(0).locator("strong").inner_text() == "replies"
    assert "in reply to" in shown.nth(0).inner_text()
    assert page.locator(".new-notice").is_hidden() and page.evaluate("window.__stayed === true")  # no reload
    assert page.inner_text("#comments-title") == "3 comments"  # the heading counts what is shown now
    page.screenshot(path=str(shots / f"new-comments-shown-{name}.png"), full_page=True)
    widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], widths
