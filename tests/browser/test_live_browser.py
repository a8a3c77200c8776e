"""Pushed updates in Chromium: two pages of one topic; what one does (post, edit, like) appears,
changes and counts in the other within 2 s over the live stream (Server-Sent Events), and a
stream dropped by the server resumes (Last-Event-ID) without a missed or a repeated change."""

import pytest

from comments import live, services

pytestmark = pytest.mark.django_db(transaction=True)

WITHIN = 2_000  # ms: the bound from a write to the other page


def _until(page, expression: str, timeout_ms: int = 10_000) -> None:
    """Poll `expression` in the page until it holds (wait_for_function evaluates strings, which the
    site's Content-Security-Policy refuses)."""
    for _ in range(timeout_ms // 50):
        if page.evaluate(expression):
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"never true: {expression}")


def _live(page):
    """Wait until the page's EventSource is open; count its later (re)openings in window.__opens."""
    _until(page, "!!(window.__commentsLive && window.__commentsLive.readyState === 1)")
    page.evaluate("window.__opens = 0; window.__commentsLive.addEventListener('open', () => window.__opens++)")


def test_a_post_an_edit_and_a_like_in_one_page_reach_the_other_within_2_s(open_page, person, make_topic, shots):
    alice, bob = person("alice"), person("bob")
    topic = make_topic("document", "chronological", title="Live together")
    first = services.comment_create(topic=topic, author=bob, text="Bob opens the discussion")
    writer, reader = open_page(alice), open_page(bob)
    for page in (writer, reader):
        page.goto(f"/t/{topic.slug}/")
        page.evaluate("window.__stayed = true")
        _live(page)

    writer.fill("#comment-form textarea[name=text]", "Alice posts **live**")
    writer.click("#comment-form button[type=submit]:not([name])")
    posted = reader.locator("article.comment", has_text="Alice posts live")
    posted.wait_for(state="visible", timeout=WITHIN)
    assert posted.locator("strong").inner_text() == "live"
    comment_id = posted.get_attribute("data-id")

    writer.wait_for_load_state()
    article = writer.locator(f"#c-{comment_id}")
    article.locator("details.edit summary").click()
    article.locator("details.edit textarea").fill("Alice posts, then edits")
    article.locator("details.edit button[type=submit]").click()
    reader.locator(f"#c-{comment_id}", has_text="Alice posts, then edits").wait_for(timeout=WITHIN)

    writer.locator(f"#c-{first.id} form.like button").click()
    reader.locator(f"#c-{first.id} .likes", has_text="1 like").wait_for(timeout=WITHIN)
    assert reader.evaluate("window.__stayed === true")  # no reload: pushed, not polled into a new page
    reader.screenshot(path=str(shots / "live-reader.png"), full_page=True)


def test_a_dropped_stream_resumes_without_a_missed_or_repeated_change(open_page, person, make_topic):
    alice, bob = person("alice"), person("bob")
    topic = make_topic("document", "chronological", title="Live resumes")
    first = services.comment_create(topic=topic, author=bob, text="Before the drop")
    reader = open_page(bob)
    reader.goto(f"/t/{topic.slug}/")
    _live(reader)
    posted = services.comment_create(topic=topic, author=alice, text="Seen live")
    reader.locator(f"#c-{posted.id}").wait_for(timeout=WITHIN)

    assert live.close_streams() >= 1  # the server ends the stream; the browser reconnects after `retry`
    missed = services.comment_create(topic=topic, author=alice, text="Posted while the stream was down")
    services.comment_edit(topic=topic, comment_id=posted.id, text="Seen live, edited while down", user=alice)
    services.comment_like(topic=topic, comment_id=first.id, user=alice)

    _until(reader, "window.__opens >= 1")  # it reconnected
    reader.locator(f"#c-{missed.id}").wait_for(timeout=5_000)
    reader.locator(f"#c-{posted.id}", has_text="edited while down").wait_for(timeout=WITHIN)
    reader.locator(f"#c-{first.id} .likes", has_text="1 like").wait_for(timeout=WITHIN)
    for comment in (first, posted, missed):
        assert reader.locator(f"article#c-{comment.id}").count() == 1  # nothing repeated
    assert reader.locator(".new-notice").is_hidden()
