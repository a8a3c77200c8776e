"""A Markdown topic as a visitor sees it in Chromium at 1280 and 390 px: no kept line breaks,
a table, a code block and a quote styled, nothing wider than the screen, and no storage
details for visitors."""

import pytest

from tests.browser.conftest import DESKTOP, PHONE

pytestmark = pytest.mark.django_db(transaction=True)

BODY = """Commons keeps a discussion under every topic. This paragraph is written
on three lines of source
but reads as one paragraph.

| Storage | Comments per record | Good for |
|---|---|---|
| document | 1 | most sites, deep threads, every order |
| bucketed | about 100 | long chronological threads read page after page |

```python
def hello(name: str) -> str:
    return f"Hello, {name}! This line is long enough to need scrolling inside its box on a phone."
```

> A quotation that an editor set apart
> on two lines of source.

The end.
"""


@pytest.mark.parametrize("viewport,name", [(DESKTOP, "desktop"), (PHONE, "phone")])
def test_a_markdown_topic_with_a_table_code_and_a_quote(open_page, person, make_topic, shots, viewport, name):
    topic = make_topic("document", "chronological", title="Markdown as written", body=BODY)
    page = open_page(viewport=viewport)
    page.goto(f"/t/{topic.slug}/")
    page.screenshot(path=str(shots / f"topic-markdown-{name}.png"), full_page=True)
    body = page.locator(".topic-body")
    assert body.locator("br").count() == 0
    first = body.locator("p").first
    # One paragraph written on three source lines: its height is that of wrapped text, not three
    # kept lines at 1280 px.
    style = page.evaluate("""() => {
        const q = (s) => getComputedStyle(document.querySelector('.topic-body ' + s));
        return {ws: q('p').whiteSpace, pre: q('pre').backgroundColor, preOverflow: q('pre').overflowX,
                quote: q('blockquote').borderLeftStyle, th: q('th').backgroundColor, td: q('td').borderTopStyle};
    }""")
    assert style["ws"] == "normal"
    assert style["pre"] not in ("rgba(0, 0, 0, 0)", "transparent") and style["preOverflow"] == "auto"
    assert style["quote"] == "solid" and style["td"] == "solid"
    assert style["th"] not in ("rgba(0, 0, 0, 0)", "transparent")
    if viewport is DESKTOP:
        lines = page.evaluate("""() => { const p = document.querySelector('.topic-body p');
            return Math.round(p.getBoundingClientRect().height / parseFloat(getComputedStyle(p).lineHeight)); }""")
        assert lines < 3, first.inner_text()  # three source lines, kept, would be three
    assert body.locator("table th").count() == 3 and body.locator("blockquote").count() == 1
    widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], widths
    assert "stored" not in page.inner_text(".topic .meta")
