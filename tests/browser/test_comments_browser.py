"""A real browser through the comment lifecycle: post, reply, like, edit, delete in place
(from the keyboard too: where focus goes after each) and without JavaScript, follow, an
editor removing a comment, and the phone layout (no horizontal overflow at 390 px with a
long URL and a 10,000-character word)."""

import pytest

from comments import services
from tests.browser.conftest import DESKTOP, PHONE

pytestmark = pytest.mark.django_db(transaction=True)

LONG_URL = "https://example.com/" + "a-very-long-path-segment/" * 20 + "?query=" + "x" * 200
LONG_WORD = "W" * 10_000


def no_reload_marker(page):
    page.evaluate("window.__stayed = true")


def stayed(page) -> bool:
    return page.evaluate("window.__stayed === true")


@pytest.fixture
def topic(make_topic):
    return make_topic("document", "threaded", title="Browser topic")


def test_post_reply_like_edit_delete_in_place(open_page, person, topic, shots):
    alice, bob = person("alice"), person("bob")
    root = services.comment_create(topic=topic, author=bob, text="Hello from **bob**")
    page = open_page(alice)
    page.goto(f"/t/{topic.slug}/")
    # Post: a full round trip (the main form), then the comment is on the page with its Markdown rendered.
    page.fill("#id_text", "My *first* comment, see https://example.org")
    assert page.inner_text("#id_text-count") == "43 / 10000"  # the script counts as you type
    page.click("#comment-form button[type=submit]:not([name=preview])")
    page.wait_for_selector("text=Your comment was posted.")
    mine = page.locator("article.comment", has_text="My first comment")
    assert mine.locator("em").inner_text() == "first"
    assert mine.locator('a[href="https://example.org"]').get_attribute("rel") == "nofollow ugc"
    # Reply in place.
    no_reload_marker(page)
    bobs = page.locator(f"#c-{root.id}")
    bobs.locator("details.reply summary").click()
    bobs.locator("textarea").fill("A reply to @bob")
    bobs.locator("details.reply button[type=submit]:not([name=preview])").click()
    reply = page.locator("article.comment", has_text="A reply to")
    reply.wait_for()
    assert reply.get_attribute("class").split()[1] == "d1" and stayed(page)
    assert reply.locator('a.mention[href="/u/bob/"]').count() == 1
    # Collapse and expand the sub-thread.
    toggle = page.locator(f"#c-{root.id} > header button.collapse")
    toggle.click()
    assert reply.is_hidden() and toggle.get_attribute("aria-expanded") == "false" and toggle.inner_text() == "Expand (1)"
    toggle.click()
    assert reply.is_visible() and toggle.get_attribute("aria-expanded") == "true"
    # Like and unlike in place.
    bobs = page.locator(f"#c-{root.id}")
    bobs.locator("form.like button").click()
    page.locator(f"#c-{root.id} form.like button[aria-pressed=true]").wait_for()
    assert "1 like" in page.locator(f"#c-{root.id} .likes").inner_text() and stayed(page)
    page.locator(f"#c-{root.id} form.like button").click()
    page.locator(f"#c-{root.id} form.like button[aria-pressed=false]").wait_for()
    assert page.locator(f"#c-{root.id} .likes").count() == 0  # no "0 likes": a count only when there are likes
    assert page.locator(f"#{mine.get_attribute('id')} form.like").count() == 0  # no liking one's own comment
    # Edit in place: a refused edit keeps the text and shows the error; a good one shows "edited".
    reply_id = reply.get_attribute("id")
    page.locator(f"#{reply_id} details.edit summary").click()
    box = page.locator(f"#{reply_id} details.edit textarea")
    box.fill("   ")
    page.locator(f"#{reply_id} details.edit button[type=submit]").click()
    page.locator(f"#{reply_id} .field-error").wait_for()
    assert box.input_value() == "   " and stayed(page)
    box.fill("A **better** reply")
    page.locator(f"#{reply_id} details.edit button[type=submit]").click()
    page.locator(f"#{reply_id} strong", has_text="better").wait_for()
    assert "edited" in page.locator(f"#{reply_id} header").inner_text()
    page.screenshot(path=str(shots / "topic-desktop-after-edit.png"), full_page=True)
    # Delete in place: a tombstone stays.
    page.locator(f"#{reply_id} details.delete summary").click()
    page.locator(f"#{reply_id} details.delete button[type=submit]").click()
    page.locator(f"#{reply_id}", has_text="This comment was deleted.").wait_for()
    assert stayed(page)
    page.reload()
    assert page.locator(f"#{reply_id}", has_text="This comment was deleted.").count() == 1


def active(page) -> str:
    """The focused element: its id, else its tag name (`BODY` when focus was lost)."""
    return page.evaluate("document.activeElement.id || document.activeElement.tagName")


def test_focus_follows_an_in_place_reply_edit_and_delete_from_the_keyboard(open_page, person, topic):
    alice, bob = person("alice"), person("bob")
    root = services.comment_create(topic=topic, author=bob, text="Reply to me")
    page = open_page(alice)
    page.goto(f"/t/{topic.slug}/")
    no_reload_marker(page)
    # Reply: Enter on "Reply", Tab to the text, type, Tab to the "Reply" button, Enter.
    page.locator(f"#c-{root.id} details.reply summary").focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    assert active(page) == f"reply-{root.id}"
    page.keyboard.type("Typed at the keyboard")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Reply"
    page.keyboard.press("Enter")
    reply = page.locator("article.comment", has_text="Typed at the keyboard")
    reply.wait_for()
    reply_id = reply.get_attribute("id")
    assert active(page) == reply_id  # the new reply, not <body> (focused as it is put on the page)
    assert reply.get_attribute("tabindex") == "-1" and stayed(page)
    # Edit: Enter on "Edit", Tab to the text, change it, Tab to "Save", Enter.
    page.locator(f"#{reply_id} details.edit summary").focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    assert active(page) == f"edit-{reply_id[2:]}"
    page.keyboard.press("ControlOrMeta+A")
    page.keyboard.type("Edited at the keyboard")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Save"
    page.keyboard.press("Enter")
    page.locator(f"#{reply_id}", has_text="Edited at the keyboard").wait_for()
    assert active(page) == reply_id  # the edited comment
    # Delete: Enter on "Delete", Tab to "Yes, delete", Enter.
    page.locator(f"#{reply_id} details.delete summary").focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Yes, delete"
    page.keyboard.press("Enter")
    page.locator(f"#{reply_id}", has_text="This comment was deleted.").wait_for()
    assert active(page) == reply_id  # the tombstone in its place
    assert "deleted" in page.locator(f"#{reply_id}").get_attribute("class").split() and stayed(page)


def test_everything_works_without_javascript(open_page, person, topic):
    alice, bob = person("alice"), person("bob")
    root = services.comment_create(topic=topic, author=bob, text="Hello")
    page = open_page(alice, javascript=False)
    page.goto(f"/t/{topic.slug}/")
    page.locator(f"#c-{root.id} form.like button").click()
    page.wait_for_selector("text=Liked: 1 like.")
    page.locator(f"#c-{root.id} details.reply summary").click()
    page.locator(f"#c-{root.id} details.reply textarea").fill("no script reply")
    page.locator(f"#c-{root.id} details.reply button[type=submit]:not([name=preview])").click()
    page.wait_for_selector("text=Your reply was posted.")
    # A refusal keeps the typed text (here: too long).
    page.fill("#id_text", "x" * 20)
    page.evaluate("document.querySelector('#id_text').removeAttribute('maxlength')")
    from django.conf import settings
    settings.COMMENTS_MAX_TEXT = 10
    page.fill("#id_text", "this is far too long")
    page.click("#comment-form button[type=submit]:not([name=preview])")
    page.wait_for_selector("#id_text-error")
    assert page.input_value("#id_text") == "this is far too long"


def test_follow_from_a_profile(open_page, person):
    alice, _bob = person("alice"), person("bob")
    page = open_page(alice)
    page.goto("/u/bob/")
    page.get_by_role("button", name="Follow").click()
    page.get_by_role("button", name="Unfollow").wait_for()
    page.goto("/u/bob/followers/")
    assert page.locator('main a[href="/u/alice/"]').count() >= 1


def test_an_editor_removes_a_comment_in_the_admin(open_page, person, topic):
    bob = person("bob")
    editor = person("boss", is_staff=True, is_superuser=True)
    spam = services.comment_create(topic=topic, author=bob, text="buy cheap things")
    page = open_page(editor)
    page.goto(f"/admin/topics/topic/{topic.pk}/comments/")
    page.check(f'input[name=comments][value="{spam.id}"]')
    page.select_option("select[name=action]", "remove")
    page.click("#content-main button[type=submit]")
    page.wait_for_load_state()
    visitor = open_page()
    visitor.goto(f"/t/{topic.slug}/")
    # removed with no reply: visitors see nothing of it, not even a placeholder
    assert "buy cheap things" not in visitor.content() and f'id="c-{spam.id}"' not in visitor.content()


@pytest.mark.parametrize("viewport,name", [(PHONE, "phone"), (DESKTOP, "desktop")])
def test_no_horizontal_overflow_with_long_words_and_deep_threads(open_page, person, make_topic, shots, viewport, name):
    alice = person("alice_with_a_rather_long_username")
    topic = make_topic("embedded", "threaded", title="A topic whose title is long enough to wrap on a phone screen")
    parent = services.comment_create(topic=topic, author=alice, text=f"Look: {LONG_URL}")
    services.comment_create(topic=topic, author=alice, text=LONG_WORD, parent=parent.id)
    for level in range(7):
        parent = services.comment_create(topic=topic, author=alice, text=f"level {level} {LONG_URL}", parent=parent.id)
    page = open_page(alice, viewport=viewport)
    for url, label in ((f"/t/{topic.slug}/", "topic"), ("/", "home"), ("/no-such-page/", "404")):
        page.goto(url)
        widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        page.screenshot(path=str(shots / f"{label}-{name}.png"), full_page=True)
        assert widths[0] <= widths[1], (label, widths)
    page.goto(f"/t/{topic.slug}/")
    header = page.evaluate("""() => { const b = document.querySelector('.brand').getBoundingClientRect();
        const n = document.querySelector('.nav').getBoundingClientRect();
        return b.right <= n.left || b.bottom <= n.top; }""")
    assert header, "the brand runs into the navigation"


def test_an_in_place_action_past_a_limit_shows_the_servers_message_and_wait(open_page, person, topic, settings):
    from django.core.cache import cache

    settings.RATE_LIMITS_ENABLED = True
    settings.RATE_LIMIT_RATES = {**settings.RATE_LIMIT_RATES, "like": {"user": ["1/min"], "ip": ["60/min"]}}
    cache.clear()
    alice, bob = person("alice"), person("bob")
    root = services.comment_create(topic=topic, author=bob, text="Like me twice")
    page = open_page(alice)
    page.goto(f"/t/{topic.slug}/")
    no_reload_marker(page)
    page.locator(f"#c-{root.id} form.like button").click()
    page.locator(f"#c-{root.id} form.like button[aria-pressed=true]").wait_for()
    page.locator(f"#c-{root.id} form.like button").click()  # the second like action in a minute: 429
    error = page.locator(f"#c-{root.id} [role=alert], #c-{root.id} .field-error").first
    error.wait_for()
    assert "Too many requests: try again in" in error.inner_text() and "second" in error.inner_text()
    assert page.locator(f"#c-{root.id} form.like button").is_disabled() and stayed(page)
    cache.clear()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
@pytest.mark.parametrize("javascript", [True, False], ids=["in-place", "no-javascript"])
def test_an_editor_removes_a_comment_from_its_menu(open_page, person, topic, shots, javascript, viewport):
    """The topic page's "Moderate" menu goes through the moderation pipeline: in place with
    JavaScript (the comment is re-rendered with its new badge), a full round trip without;
    at 1280 and 390 px (the open menu stays inside the screen)."""
    from moderation.services import editor_add

    bob = person("bob")
    editor = person("editor-in-group")  # not staff, not superuser: the Editors group is enough
    editor_add(user=editor)
    root = services.comment_create(topic=topic, author=bob, text="a fair question")
    spam = services.comment_create(topic=topic, author=bob, text="buy cheap things", parent=root.id)
    page = open_page(editor, javascript=javascript, viewport=viewport)
    page.goto(f"/t/{topic.slug}/")
    if javascript:
        no_reload_marker(page)
    label = f"{'js' if javascript else 'nojs'}-{viewport['width']}"
    article = page.locator(f"#c-{spam.id}")
    article.locator("details.moderate summary").click()
    remove = article.get_by_role("button", name="Remove")
    remove.wait_for()
    box = remove.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"], box  # the open menu fits the screen
    widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], widths
    article.screenshot(path=str(shots / f"moderate-menu-open-{label}.png"))
    remove.click()
    page.locator(f"#c-{spam.id} .badge", has_text="removed").wait_for()
    page.screenshot(path=str(shots / f"moderate-menu-{label}.png"), full_page=True)
    if javascript:
        assert stayed(page)
        assert "Remove: 1 comment." in page.locator(f"#c-{spam.id} [role=status]").inner_text()
    else:
        assert "Remove: 1 comment." in page.content()
    visitor = open_page()
    visitor.goto(f"/t/{topic.slug}/")
    # removed with no reply: visitors see nothing of it, not even a placeholder
    assert "buy cheap things" not in visitor.content() and f'id="c-{spam.id}"' not in visitor.content()
    assert "a fair question" in visitor.content()
