"""A comment's actions are buttons with an icon and a label, not text links and ▸ disclosure
triangles: each one a box drawn as a button, its icon hidden from screen readers, its accessible
name naming what it acts on ("Reply to bob"); used from the keyboard alone; axe-core finds nothing
serious or critical. At 1280 and 390 px, signed in as an editor (every action a comment offers)."""

import pytest

from comments import services
from moderation.services import editor_add
from tests.browser.conftest import DESKTOP, PHONE
from tests.browser.test_accessibility_browser import violations

pytestmark = pytest.mark.django_db(transaction=True)

# Every action control of one comment: what it is, how it is drawn, what a screen reader reads.
ACTIONS = """(id) => [...document.querySelectorAll(
    '#' + id + ' :is(.actions, .tools) :is(a.permalink, form.like button, details > summary)')].map(e => {
    const s = getComputedStyle(e), r = e.getBoundingClientRect(), icon = e.querySelector(':scope > svg.icon');
    return {tag: e.tagName.toLowerCase(), label: (e.querySelector('.label') || e).textContent.trim(),
            marker: e.tagName === 'SUMMARY' && s.display === 'list-item' && s.listStyleType !== 'none',
            framed: parseFloat(s.borderTopWidth) > 0 && parseFloat(s.borderTopLeftRadius) > 0,
            height: r.height,
            icon: !!icon && icon.getAttribute('aria-hidden') === 'true' && icon.getBoundingClientRect().width > 0};
  })"""


@pytest.mark.parametrize("viewport,name", [(DESKTOP, "desktop"), (PHONE, "phone")])
def test_comment_actions_are_labelled_buttons_with_icons_usable_from_the_keyboard(open_page, person, make_topic, shots,
                                                                                   viewport, name):
    bob, boss = person("bob"), person("boss")
    editor_add(user=boss)
    topic = make_topic("document", "threaded", title="Actions topic")
    root = services.comment_create(topic=topic, author=bob, text="Press my buttons")
    services.comment_create(topic=topic, author=boss, text="an answer", parent=root.id)
    mine = services.comment_create(topic=topic, author=boss, text="my own words")
    page = open_page(boss, viewport=viewport)
    page.goto(f"/t/{topic.slug}/")
    page.screenshot(path=str(shots / f"comment-actions-{name}.png"), full_page=True)
    theirs = page.evaluate(ACTIONS, f"c-{root.id}")
    own = page.evaluate(ACTIONS, f"c-{mine.id}")
    # an editor may edit and delete anyone's comment, and reports none of their own
    assert {a["label"] for a in theirs} == {"Like", "permalink", "Report", "Moderate", "Reply", "Edit", "Delete"}, theirs
    assert {a["label"] for a in own} == {"permalink", "Moderate", "Reply", "Edit", "Delete"}, own
    for action in theirs + own:
        assert action["icon"] and action["framed"] and not action["marker"] and action["height"] >= 24, action
    # What a screen reader reads: the label and what it acts on; the icon adds nothing.
    article = page.locator(f"#c-{root.id}")
    assert article.get_by_role("button", name="Like the comment by bob", exact=True).get_attribute("aria-pressed") == "false"
    assert article.locator("details.reply > summary").evaluate("e => e.textContent.trim()") == "Reply to bob"
    assert article.get_by_role("link", name="permalink of the comment by bob").count() == 1
    assert article.get_by_role("button", name="Collapse", exact=True).count() == 1
    collapse = article.locator(":scope > header button.collapse")
    assert collapse.locator("svg.icon").count() == 1
    # The keyboard alone: collapse and expand the thread, like, open and close a reply.
    collapse.focus()
    page.keyboard.press("Enter")
    assert collapse.get_attribute("aria-expanded") == "false" and collapse.inner_text().strip() == "Expand (1)"
    assert collapse.locator("svg.icon").count() == 1  # the label changed beside the icon
    page.keyboard.press("Enter")
    assert collapse.get_attribute("aria-expanded") == "true"
    article.get_by_role("button", name="Like the comment by bob").focus()
    page.keyboard.press("Space")
    liked = page.locator(f"#c-{root.id}").get_by_role("button", name="Unlike the comment by bob", exact=True)
    liked.wait_for()
    assert liked.get_attribute("aria-pressed") == "true"
    assert page.evaluate("document.activeElement.getAttribute('aria-pressed')") == "true"  # focus stayed on it
    page.locator(f"#c-{root.id} details.reply > summary").focus()
    page.keyboard.press("Enter")
    assert page.locator(f"#c-{root.id} details.reply").get_attribute("open") is not None
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == f"reply-{root.id}"
    assert violations(page) == []
