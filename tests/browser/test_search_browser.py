"""The header's search box at 1280 and 390 px: typing a word and pressing Enter shows the
results with the word marked, and the header does not overflow."""

import pytest

from comments import services
from tests.browser.conftest import DESKTOP, PHONE

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("viewport,name", [(DESKTOP, "desktop"), (PHONE, "phone")])
def test_search_from_the_header_marks_the_words(open_page, person, make_topic, shots, viewport, name):
    topic = make_topic("document", title="Growing zucchini in July")
    services.comment_create(topic=topic, author=person("ana"), text="My **zucchini** grew <b>fast</b> in July")
    page = open_page(viewport=viewport)
    page.goto("/")
    page.screenshot(path=str(shots / f"header-search-{name}.png"))
    page.fill("#header-q", "Zucchini july")
    page.press("#header-q", "Enter")
    page.wait_for_url("**/search/?q=Zucchini+july")
    page.screenshot(path=str(shots / f"search-results-{name}.png"), full_page=True)
    marks = page.locator("main mark").all_inner_texts()
    assert marks.count("zucchini") == 2 and marks.count("July") == 2  # the topic title and the comment
    assert page.locator("main b").count() == 0 and "<b>fast</b>" in page.inner_text("main")
    assert page.input_value("#header-q") == "Zucchini july"
    widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], widths
