"""The site's own pages in Chromium under its Content-Security-Policy: nothing refused (no
console error), and the favicon is the site's own file. The API docs pages: test_api_docs_browser.py."""

import pytest

from comments import services
from tests.browser.conftest import csp_refusals

pytestmark = pytest.mark.django_db(transaction=True)


def test_no_page_breaks_the_content_security_policy_and_the_favicon_is_served(open_page, person, make_topic):
    alice = person("alice")
    topic = make_topic("document", "threaded", title="Policed topic", tags=["Rules"])
    comment = services.comment_create(topic=topic, author=alice, text="A comment with a [link](https://example.org)")
    pages = {None: ["/", f"/t/{topic.slug}/", "/tags/rules/", "/search/?q=comment", "/accounts/login/",
                    "/no-such-page/"],
             alice: [f"/t/{topic.slug}/", f"/t/{topic.slug}/c/{comment.id}/", "/notifications/", "/accounts/"]}
    for user, urls in pages.items():
        page = open_page(user)
        refused, icons = csp_refusals(page), []
        page.on("response", lambda response, icons=icons: icons.append((response.url, response.status))
                if "favicon" in response.url else None)
        for url in urls:
            page.goto(url)
            page.wait_for_load_state("networkidle")
            assert not refused, (url, refused)
            assert page.locator("link[rel=icon]").count() == 1, url
        assert icons and all(status == 200 for _, status in icons) and icons[0][0].endswith("/static/favicon.svg")
