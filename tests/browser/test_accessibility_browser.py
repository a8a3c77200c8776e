"""axe-core in Chromium on every page type, at 1280 and 390 px: no serious or critical violation.

axe-core is vendored from the npm package (tests/browser/vendor/axe-core: version, checksum,
MPL-2.0 licence) and injected into each page by Playwright: nothing is fetched at test time
and the site never serves it."""

import hashlib
from pathlib import Path

import pytest

from comments import services as comments
from moderation import services as moderation
from notifications import services as notifications
from social import services as social
from tests.browser.conftest import DESKTOP, PHONE

pytestmark = pytest.mark.django_db(transaction=True)

AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
AXE_SHA256 = "e9e5863c33a874f09bc01acd9234b7e3c871479f5eef8802fa582544465e6d01"  # axe-core 4.11.0
BLOCKING = {"serious", "critical"}

RUN_AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' :: ' + (n.failureSummary || '').slice(0, 200))}));
}"""


def test_the_vendored_axe_is_the_pinned_file():
    assert hashlib.sha256(AXE.read_bytes()).hexdigest() == AXE_SHA256
    assert AXE.read_text()[:30].startswith("/*! axe v4.11.0")


def violations(page) -> list[dict]:
    # Evaluated through the DevTools protocol: the site's Content-Security-Policy (script-src
    # 'self') refuses injected <script> tags, and stays on for the page itself.
    page.evaluate(AXE.read_text() + "\n;undefined")
    return [v for v in page.evaluate(RUN_AXE) if v["impact"] in BLOCKING]


@pytest.mark.parametrize("viewport,name", [(DESKTOP, "desktop"), (PHONE, "phone")])
def test_no_serious_or_critical_violation_on_any_page_type(open_page, person, make_topic, shots, viewport, name):
    alice, bob = person("alice"), person("bob")
    boss = person("boss", is_staff=True, is_superuser=True)
    topic = make_topic("document", "threaded", title="Accessible topic", tags=["Guides"],
                       body="Some **Markdown**.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> a quote\n\n    code")
    root = comments.comment_create(topic=topic, author=alice, text="A *first* comment, cc @bob")
    comments.comment_edit(topic=topic, comment_id=root.id, text="A *first* comment, edited, cc @bob", user=alice)
    tag = topic.tags.get()
    unsubscribe = notifications.unsubscribe_token(user=alice, kind="all")
    reply = comments.comment_create(topic=topic, author=bob, text="A reply with `code`", parent=root.id)
    comments.comment_like(topic=topic, comment_id=root.id, user=bob)
    social.follow_create(follower=bob, followee=alice)
    social.follow_create(follower=alice, followee=bob)
    moderation.flag_create(topic=topic, comment_id=reply.id, user=alice, reason="abuse")

    pages = {
        None: [("home", "/"), ("topic", f"/t/{topic.slug}/"),
               ("topic-page-2", f"/t/{topic.slug}/?order=threaded&page=2&page_size=1"),  # starts inside a thread
               ("permalink", f"/t/{topic.slug}/c/{reply.id}/"),
               ("profile", "/u/alice/"), ("followers", "/u/alice/followers/"), ("search", "/search/?q=comment"),
               ("login", "/accounts/login/"), ("signup", "/accounts/signup/"), ("admin-login", "/admin/login/"),
               ("topic-hot", f"/t/{topic.slug}/?order=hot"), ("password-reset", "/accounts/password/reset/"),
               ("tag", f"/tags/{tag.slug}/"), ("unsubscribe", f"/notifications/unsubscribe/{unsubscribe}/"),
               ("api-redoc", "/api/redoc/"),  # Swagger UI (/api/docs/) is left out: its own markup fails
               ("not-found", "/no-such-page/")],  # color-contrast and nested-interactive
        alice: [("topic-member", f"/t/{topic.slug}/"), ("feed", "/feed/"), ("notifications", "/notifications/"),
                ("account", "/accounts/"), ("account-email", "/accounts/email/"),
                ("account-password", "/accounts/password/change/"), ("account-delete", "/accounts/delete/"),
                ("notification-settings", "/notifications/preferences/"), ("following", "/u/alice/following/"),
                ("revisions", f"/t/{topic.slug}/c/{root.id}/revisions/"),
                ("topic-preview", f"/t/{topic.slug}/")],  # then "Preview" pressed: the topic page with the draft
        boss: [("topic-editor", f"/t/{topic.slug}/"), ("moderation-queue", "/moderation/?state=reported"),
               ("moderation-log", "/moderation/log/"), ("moderation-users", "/moderation/users/"), ("admin", "/admin/"),
               ("admin-topic-moderation", f"/admin/topics/topic/{topic.pk}/comments/")],
    }
    found, wide = {}, {}
    for user, targets in pages.items():
        page = open_page(user, viewport=viewport)
        for label, url in targets:
            response = page.goto(url)
            assert response.status == (404 if label == "not-found" else 200), (label, url, response.status)
            if label == "api-redoc":
                page.wait_for_selector(".menu-content", state="attached")  # ReDoc renders after loading the schema
            if label == "topic-preview":
                page.fill("#id_text", "A **previewed** comment")
                page.click("#comment-form button[name=preview]")
                page.locator("#comment-form section.preview").wait_for()
            page.screenshot(path=str(shots / f"a11y-{label}-{name}.png"), full_page=True)
            if problems := violations(page):
                found[label] = problems
            # Nothing widens the page past the screen (a wide table scrolls inside its own box).
            if (width := page.evaluate("document.documentElement.scrollWidth")) > viewport["width"] + 1:
                wide[label] = width
    assert not wide, f"wider than the {viewport['width']} px screen: {wide}"
    assert not found, "\n".join(f"{label}: {v['impact']} {v['id']} ({v['help']}): {v['nodes']}"
                                 for label, problems in found.items() for v in problems)
