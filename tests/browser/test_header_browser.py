"""The header of a signed-in editor (the most links it ever holds) and a topic page's order
switcher, at 1280 and 390 px: no item breaks over two lines, and at 1280 px the whole header
is one row. Measured on the element boxes Chromium lays out."""

import pytest

from comments import services
from moderation.services import editor_add
from tests.browser.conftest import DESKTOP, PHONE

pytestmark = pytest.mark.django_db(transaction=True)

# Each item's line boxes (getClientRects: one per line an inline box spans) and its border box.
BOXES = """(selector) => [...document.querySelectorAll(selector)].filter(e => e.offsetParent !== null).map(e => {
  const r = e.getBoundingClientRect();
  const lines = new Set([...e.getClientRects()].map(q => Math.round(q.top)));
  const style = getComputedStyle(e);
  const line = parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.5;
  return {text: (e.getAttribute('aria-label') || e.innerText || e.tagName).trim(), top: r.top, bottom: r.bottom,
          height: r.height, line, lines: lines.size, right: r.right};
})"""
HEADER_ITEMS = ".site-header .brand, .site-header .nav > *, .site-header .header-search"


def one_line(items: list[dict]) -> list[str]:
    """The items laid out over more than one line (a text that wrapped inside its box)."""
    return [f"{i['text']!r}: {i['lines']} line boxes, {i['height']:.0f}px for a {i['line']:.0f}px line"
            for i in items if i["lines"] > 1 or i["height"] > 1.8 * i["line"]]


def rows(items: list[dict]) -> set[int]:
    """The rows the items sit in, by the vertical middle of their boxes (to 8 px)."""
    return {round((i["top"] + i["bottom"]) / 2 / 8) for i in items}


@pytest.mark.parametrize("viewport,name", [(DESKTOP, "desktop"), (PHONE, "phone")])
def test_the_editors_header_and_the_order_switcher_keep_each_item_on_one_line(open_page, person, make_topic, shots,
                                                                              viewport, name):
    boss = person("a-rather-long-editor-name", is_staff=True)
    editor_add(user=boss)
    topic = make_topic("document", "threaded", title="Header topic")
    services.comment_create(topic=topic, author=boss, text="a comment")
    page = open_page(boss, viewport=viewport)
    page.goto(f"/t/{topic.slug}/")
    page.screenshot(path=str(shots / f"header-editor-{name}.png"))
    header = page.evaluate(BOXES, HEADER_ITEMS)
    assert {"Commons", "Topics", "API", "Admin", "Log out", "Header search"} <= {i["text"] for i in header}, header
    assert one_line(header) == [], header
    nav = [i for i in header if i["text"] not in ("Commons", "Header search")]
    assert len(rows(nav)) == 1, nav  # the nav's items side by side, "API" too
    if viewport is DESKTOP:  # room for all of it: one row, the brand, every link and the search box, none hidden
        assert len(rows(header)) == 1, header
        assert page.evaluate("(n => n.scrollWidth <= n.clientWidth)(document.querySelector('.nav'))")
    orders = page.evaluate(BOXES, ".toolbar > *")
    assert {"Hot", "Threaded"} <= {i["text"] for i in orders} and one_line(orders) == [], orders
    assert len(rows(orders)) == 1, orders  # "Hot" beside the others
    assert page.evaluate("(n => n.scrollWidth <= n.clientWidth)(document.querySelector('.toolbar'))")  # all in view
    widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], widths
