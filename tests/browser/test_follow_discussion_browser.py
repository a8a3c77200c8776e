"""Following a discussion from its page in Chromium, at 1280 and 390 px: the button on the
topic page subscribes (a plain form, no script needed), the next comment by someone else
reaches me as a notification, and the same button unfollows."""

import pytest

from comments import services
from notifications import selectors
from tests.browser.conftest import DESKTOP, PHONE

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("viewport,name", [(DESKTOP, "desktop"), (PHONE, "phone")])
def test_follow_a_discussion_from_its_page(open_page, person, make_topic, shots, viewport, name):
    alice, bob = person("alice"), person("bob")
    topic = make_topic("bucketed", "chronological", title="A discussion to follow")
    services.comment_create(topic=topic, author=bob, text="Bob opens the discussion")
    page = open_page(alice, viewport=viewport)
    page.goto(f"/t/{topic.slug}/?page=1")
    button = page.locator("form.follow-discussion button")
    assert button.inner_text() == "Follow discussion" and button.get_attribute("aria-pressed") == "false"
    button.click()
    page.wait_for_selector("text=You follow this discussion")
    assert page.url.endswith(f"/t/{topic.slug}/?page=1")  # back where I was
    button = page.locator("form.follow-discussion button")
    assert button.get_attribute("aria-pressed") == "true" and "Unfollow" in button.inner_text()
    page.screenshot(path=str(shots / f"follow-discussion-{name}.png"), full_page=False)
    widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], widths
    assert selectors.follows_discussion(user=alice, topic=topic)

    services.comment_create(topic=topic, author=bob, text="Something new for the followers")
    assert any(n.kind == "comment" for n in selectors.notifications_page(user=alice).items)

    button.click()
    page.wait_for_selector("text=You no longer follow this discussion")
    assert page.locator("form.follow-discussion button").inner_text() == "Follow discussion"
    assert not selectors.follows_discussion(user=alice, topic=topic)


def test_visitors_see_no_follow_button(open_page, make_topic, person):
    topic = make_topic("document", "chronological", title="Anonymous reading")
    page = open_page(None)
    page.goto(f"/t/{topic.slug}/")
    assert page.locator("form.follow-discussion").count() == 0
