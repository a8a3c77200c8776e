"""The moderation queue worked by keyboard only, at 1280 and 390 px: move with j/k, the author's
history appears beside (below, on a phone) the current comment, h hides it, u undoes that, a
approves the next; the tabs' counts follow; the page never scrolls sideways and axe-core finds
nothing serious in the workspace."""

import pytest

from comments import selectors as comment_selectors
from comments import services as comments
from moderation import services as moderation
from tests.browser.conftest import DESKTOP, PHONE
from tests.browser.test_accessibility_browser import violations

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_an_editor_moderates_the_queue_by_keyboard_with_undo(open_page, person, make_topic, shots, viewport):
    topic = make_topic("document", "chronological", title="Workspace topic")
    editor = person("boss", is_staff=True)
    moderation.editor_add(user=editor)
    alice, bob = person("alice"), person("bob")
    reported = []
    for n in range(3):
        comment = comments.comment_create(topic=topic, author=alice if n != 1 else bob,
                                          text=f"Reported comment number {n}")
        moderation.flag_create(topic=topic, comment_id=comment.id, user=bob if n != 1 else alice, reason="spam")
        reported.append(comment)

    page = open_page(editor, viewport=viewport)
    page.goto("/moderation/?state=reported")
    page.locator(".workspace").wait_for()
    count = page.locator('strong[aria-current=page] [data-count="reported"]')
    assert count.inner_text() == "3"

    page.keyboard.press("j")  # the first (newest) entry: comment 2, by alice
    current = page.locator("#result_list tr.current")
    assert "Reported comment number 2" in current.inner_text()
    drawer = page.locator(".author-drawer")
    drawer.locator("h2", has_text="alice").wait_for()
    page.keyboard.press("j")  # comment 1, by bob: the drawer follows
    drawer.locator("h2", has_text="bob").wait_for()
    assert "Reported comment number 1" in page.locator("#result_list tr.current").inner_text()

    page.keyboard.press("h")  # hide comment 1
    page.locator(".workspace-status", has_text="Hide: 1 comment.").wait_for()
    page.wait_for_function("document.querySelector('strong[aria-current=page] [data-count=reported]').textContent === '2'")
    assert comment_selectors.comment_get(topic=topic, comment_id=reported[1].id, viewer=editor).status == "author_only"
    assert "Reported comment number 0" in page.locator("#result_list tr.current").inner_text()  # moved on

    page.keyboard.press("u")  # undo: comment 1 is shown again, the cursor back on it
    page.locator(".workspace-status", has_text="Undone.").wait_for()
    assert comment_selectors.comment_get(topic=topic, comment_id=reported[1].id, viewer=editor).status == "visible"
    assert "Reported comment number 1" in page.locator("#result_list tr.current").inner_text()

    page.keyboard.press("j")
    page.keyboard.press("a")  # approve comment 0: its reports close
    page.locator(".workspace-status", has_text="Approve: 1 comment.").wait_for()
    page.wait_for_function("document.querySelector('strong[aria-current=page] [data-count=reported]').textContent === '1'")

    label = viewport["width"]
    page.screenshot(path=str(shots / f"moderation-workspace-{label}.png"), full_page=True)
    widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], widths
    assert violations(page) == []
