"""Nothing a user may not see reaches notifications or e-mail: a draft's or a scheduled topic's
title and slug, a followed discussion sent back to draft."""

import datetime as dt

import pytest
from django.core import mail
from django.utils import timezone

from comments.services import comment_create
from notifications import selectors, services
from topics.services import topic_create, topic_update

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("when", ["draft", "scheduled"])
def test_a_mention_in_a_topic_that_is_not_live_tells_only_editors(editor, make_user, api_client, when):
    ana = make_user("ana", email="ana@example.org", email_verified=True)
    editor.email = "editor@example.org"
    editor.save()
    editor.emailaddress_set.create(email=editor.email, verified=True, primary=True)  # the site mails confirmed addresses
    kwargs = {"status": "draft"} if when == "draft" else {"publish_at": timezone.now() + dt.timedelta(days=1)}
    topic = topic_create(author=editor, title="Secret plans", comment_storage="document", slug="secret-plans", **kwargs)
    writer = make_user("writer", is_staff=True)
    comment_create(topic=topic, author=writer, text="hello @ana and @editor")
    api_client.force_authenticate(ana)
    body = api_client.get("/api/notifications/").content.decode()
    assert "secret-plans" not in body and "Secret plans" not in body
    assert selectors.notifications_page(user=ana).items == [] and selectors.unread_count(user=ana) == 0
    assert [m.to for m in mail.outbox] == [["editor@example.org"]]  # editors may see the draft
    assert all("ana@example.org" not in m.to for m in mail.outbox)


def test_a_followed_discussion_sent_back_to_draft_shows_neither_title_nor_slug(editor, make_user, api_client, client):
    ana, bob = make_user("ana"), make_user("bob")
    topic = topic_create(author=editor, title="Was public", comment_storage="embedded", slug="was-public")
    services.subscription_create(user=ana, topic=topic)
    comment_create(topic=topic, author=bob, text="a comment")
    assert [n.kind for n in selectors.notifications_page(user=ana).items] == ["comment"]
    topic_update(topic=topic, editor=editor, status="draft")
    api_client.force_authenticate(ana)
    body = api_client.get("/api/notifications/").content.decode()
    assert "was-public" not in body and "Was public" not in body
    client.force_login(ana)
    page = client.get("/notifications/").content.decode()
    assert "was-public" not in page and "Was public" not in page
    topic_update(topic=topic, editor=editor, status="published")  # live again: shown again
    assert "was-public" in api_client.get("/api/notifications/").content.decode()
