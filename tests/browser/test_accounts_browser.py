"""The account pages in Chromium at 1280 px and 390 px: resetting a password through the
e-mailed link, adding and verifying an e-mail address, downloading my data, deleting my
account (and finding no trace of it). Screenshots go to BROWSER_SCREENSHOTS."""

import json
import re

import pytest
from django.core import mail

from tests.browser.conftest import DESKTOP, PASSWORD, PHONE
from tests.browser.test_accessibility_browser import violations

pytestmark = pytest.mark.django_db(transaction=True)

WIDTHS = [pytest.param(DESKTOP, id="1280"), pytest.param(PHONE, id="390")]
LINK = re.compile(r"https?://\S+")


def emailed_link(fragment: str) -> str:
    for message in reversed(mail.outbox):
        for url in LINK.findall(message.body):
            if fragment in url:
                return "/" + url.split("://", 1)[1].split("/", 1)[1]
    raise AssertionError(f"no e-mailed link with {fragment!r} in {len(mail.outbox)} messages")


def no_overflow(page):
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"the page is {width} px wide"


@pytest.mark.parametrize("viewport", WIDTHS)
def test_reset_a_password_through_the_emailed_link(open_page, person, shots, viewport):
    person("forgetful", email="forgetful@example.com")
    page = open_page(viewport=viewport)
    page.goto("/accounts/signup/")
    no_overflow(page)
    page.screenshot(path=shots / f"account-signup-{viewport['width']}.png", full_page=True)
    page.goto("/accounts/login/")
    no_overflow(page)
    page.screenshot(path=shots / f"account-login-{viewport['width']}.png", full_page=True)
    page.click("text=Forgot your password?")
    page.fill("input[name=email]", "forgetful@example.com")
    no_overflow(page)
    page.screenshot(path=shots / f"account-reset-request-{viewport['width']}.png", full_page=True)
    page.click("main form button[type=submit]")
    page.wait_for_load_state()
    assert "e-mail" in page.inner_text("main").lower() or "email" in page.inner_text("main").lower()
    page.goto(emailed_link("/accounts/password/reset/key/"))
    page.fill("input[name=password1]", "a-fresh-passphrase-31")
    page.fill("input[name=password2]", "a-fresh-passphrase-31")
    no_overflow(page)
    assert violations(page) == []  # axe-core: no serious or critical violation on the e-mailed link's page
    page.screenshot(path=shots / f"account-reset-form-{viewport['width']}.png", full_page=True)
    page.click("main form button[type=submit]")
    page.wait_for_load_state()
    page.goto("/accounts/login/")
    page.fill("input[name=login]", "forgetful@example.com")  # log-in by e-mail
    page.fill("input[name=password]", "a-fresh-passphrase-31")
    page.click("main form button[type=submit]")
    page.wait_for_load_state()
    assert page.locator("header").get_by_text("forgetful").count() >= 1


@pytest.mark.parametrize("viewport", WIDTHS)
def test_add_and_verify_an_email(open_page, person, shots, viewport):
    user = person("quiet")
    page = open_page(user, viewport=viewport)
    page.goto("/accounts/")
    page.click("main >> text=add one")
    page.fill("input[name=email]", "quiet@example.com")
    page.click("button[name=action_add]")
    page.wait_for_load_state()
    no_overflow(page)
    page.screenshot(path=shots / f"account-email-added-{viewport['width']}.png", full_page=True)
    page.goto(emailed_link("/accounts/confirm-email/"))
    no_overflow(page)
    assert violations(page) == []
    page.screenshot(path=shots / f"account-email-confirm-{viewport['width']}.png", full_page=True)
    page.click("main form button[type=submit]")
    page.wait_for_load_state()
    page.goto("/accounts/")
    facts = page.inner_text("dl.facts")
    assert "quiet@example.com" in facts and "not verified" not in facts and "verified" in facts
    page.screenshot(path=shots / f"account-page-{viewport['width']}.png", full_page=True)


@pytest.mark.parametrize("viewport", WIDTHS)
def test_download_my_data(open_page, person, make_topic, shots, viewport):
    from comments import services as comment_services

    user = person("keeper")
    topic = make_topic("embedded", "threaded")
    comment_services.comment_create(topic=topic, author=user, text="worth keeping")
    page = open_page(user, viewport=viewport)
    page.goto("/accounts/")
    no_overflow(page)
    page.screenshot(path=shots / f"account-download-{viewport['width']}.png", full_page=True)
    with page.expect_download() as download:
        page.click("text=Download my data")
    data = json.loads(open(download.value.path()).read())
    assert data["profile"]["username"] == "keeper"
    assert [c["text"] for c in data["comments"]] == ["worth keeping"] and data["comments"][0]["storage"] == "embedded"


@pytest.mark.parametrize("viewport", WIDTHS)
def test_delete_my_account(open_page, person, make_topic, shots, viewport):
    from comments import services as comment_services
    from core.mongo import get_db
    from social import services as social_services

    user, friend = person("leaving_soon"), person("friend")
    social_services.follow_create(follower=friend, followee=user)
    social_services.follow_create(follower=user, followee=friend)
    topics = [make_topic(storage, order, title=f"Farewell in {storage}") for storage, order in
              (("document", "threaded"), ("embedded", "threaded"), ("bucketed", "chronological"))]
    for each in topics:  # a comment, a like and a reply to a friend in every strategy
        mine = comment_services.comment_create(topic=each, author=user, text="goodbye everyone")
        theirs = comment_services.comment_create(topic=each, author=friend, text="farewell, friend")
        comment_services.comment_like(topic=each, comment_id=theirs.id, user=user)
        comment_services.comment_create(topic=each, author=friend, text="see you", parent=mine.id)
    page = open_page(user, viewport=viewport)
    page.goto("/accounts/")
    page.click("text=Delete my account…")
    page.check("input[value=remove]")
    page.fill("input[name=password]", PASSWORD)
    no_overflow(page)
    page.screenshot(path=shots / f"account-delete-{viewport['width']}.png", full_page=True)
    page.click("main form button[type=submit]")  # not confirmed: the browser refuses the form
    assert "/accounts/delete/" in page.url
    page.check("input[name=confirm]")
    page.click("main form button[type=submit]")
    page.wait_for_load_state()
    assert "deleted" in page.inner_text(".messages")
    page.screenshot(path=shots / f"account-deleted-{viewport['width']}.png", full_page=True)
    assert not type(user).objects.filter(pk=user.pk).exists()
    db = get_db()
    for name in db.list_collection_names():  # every strategy's comments, likes, feeds, notifications, search
        for doc in db[name].find():
            text = json.dumps(doc, default=str)
            assert "leaving_soon" not in text and "goodbye everyone" not in text, name
            assert (doc.get("user_id"), doc.get("actor_id"), doc.get("follower_id"), doc.get("followee_id")).count(
                user.pk) == 0, (name, doc)
    for each in topics:
        page.goto(f"/t/{each.slug}/")
        assert "goodbye everyone" not in page.inner_text("main") and "leaving_soon" not in page.inner_text("main")
    page.screenshot(path=shots / f"account-deleted-topic-{viewport['width']}.png", full_page=True)
    page.goto("/search/?q=goodbye")
    assert "goodbye everyone" not in page.inner_text("main")
    page.screenshot(path=shots / f"account-deleted-search-{viewport['width']}.png", full_page=True)
    theirs = open_page(friend, viewport=viewport)
    for url in ("/notifications/", "/feed/", "/u/friend/followers/", "/u/friend/following/"):
        theirs.goto(url)
        assert "leaving_soon" not in theirs.inner_text("main"), url
    page.goto("/u/friend/")
    page.screenshot(path=shots / f"account-deleted-friend-{viewport['width']}.png", full_page=True)
