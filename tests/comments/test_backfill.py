"""Comments stored before Markdown (no `html`) and discussions stored before the hints, in every
layout: every read path renders the missing html when read (pages, the API, threads, the
in-place fragment, revisions), and `manage.py comments_backfill` stores it and recounts the
hints (`comments.services.comment_backfill`), with progress output, idempotently."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from comments import selectors, services
from core.paging import PageRequest

pytestmark = pytest.mark.django_db

# Where each strategy keeps its comments and its per-discussion counter (the hints).
STORAGE = {"document": ("comments", "comment_document_discussions"),
           "embedded": ("comment_discussions", "comment_discussions"),
           "bucketed": ("comment_buckets", "comment_bucket_discussions")}


def _drop_html(value):
    if isinstance(value, dict):
        return {k: _drop_html(v) for k, v in value.items() if k != "html"}
    if isinstance(value, list):
        return [_drop_html(v) for v in value]
    return value


def as_before_markdown(mongo_db, topic):
    """Rewrite the topic's stored comments as an older version left them: no `html` field
    anywhere, no discussion hints on the counter."""
    comments, counters = STORAGE[topic.comment_storage]
    key = "_id" if comments == counters else "discussion_id"
    for doc in list(mongo_db[comments].find({key: topic.discussion_id})):
        mongo_db[comments].replace_one({"_id": doc["_id"]}, _drop_html(doc))
    mongo_db[counters].update_one({"_id": topic.discussion_id}, {"$unset": {"pinned": "", "moderated": ""}})


def stored(topic, comment_id):
    return services.comment_manager(topic).get(discussion_id=topic.discussion_id, comment_id=comment_id,
                                               threaded=services.is_threaded(topic))


@pytest.fixture
def old_discussion(topic, make_user, editor, mongo_db):
    alice, bob = make_user("alice"), make_user("bob")
    root = services.comment_create(topic=topic, author=alice, text="**bold** for @bob and @nobody")
    reply = services.comment_create(topic=topic, author=bob, text="a reply with https://example.org/x", parent=root.id)
    gone = services.comment_create(topic=topic, author=bob, text="soon deleted")
    services.comment_pin_store(topic=topic, comment_id=reply.id, pinned=True)
    services.comment_delete(topic=topic, comment_id=gone.id, user=bob)
    as_before_markdown(mongo_db, topic)
    assert stored(topic, root.id).html == "" and stored(topic, reply.id).html == ""
    return root, reply, gone


BOLD = "<strong>bold</strong>"
MENTION = '<a href="/u/bob/"'


def test_every_read_path_renders_what_was_stored_without_html(client, api_client, topic, old_discussion,
                                                              django_assert_max_num_queries):
    root, reply, gone = old_discussion
    with django_assert_max_num_queries(1):  # the @names of the whole page: one query, not one per comment
        page = selectors.comment_page(topic=topic, request=PageRequest(page=1))
    html = {c.id: c.html for c in page.items}
    assert BOLD in html[root.id] and MENTION in html[root.id] and "@nobody" in html[root.id]
    assert 'href="https://example.org/x"' in html[reply.id] and 'rel="nofollow ugc"' in html[reply.id]
    assert html[gone.id] == ""  # a tombstone stays empty
    assert BOLD in selectors.comment_get(topic=topic, comment_id=root.id).html
    assert BOLD in selectors.comment_thread(topic=topic, comment_id=root.id)[0].html
    body = api_client.get(f"/api/topics/{topic.slug}/comments/").json()
    assert BOLD in next(c for c in body["results"] if c["id"] == root.id)["html"]
    assert BOLD in api_client.get(f"/api/topics/{topic.slug}/comments/{root.id}/").json()["html"]
    assert BOLD in client.get(f"/t/{topic.slug}/").content.decode()
    assert BOLD in client.get(f"/t/{topic.slug}/c/{root.id}/").content.decode()
    # The hints are gone with the old layout: no Pinned block until the backfill recounts them.
    assert page.extra["pinned"] == []


def test_backfill_stores_html_and_hints_with_progress_and_is_idempotent(topic, old_discussion, editor):
    root, reply, gone = old_discussion
    out = StringIO()
    call_command("comments_backfill", topic.slug, stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == f"{topic.slug}: 3 comments, 2 rendered, 1 pinned, moderated"
    assert "1 topic(s), 3 comment(s) checked, 2 rendered, 1 pinned" in lines[-1]
    assert BOLD in stored(topic, root.id).html and MENTION in stored(topic, root.id).html
    assert "nofollow ugc" in stored(topic, reply.id).html
    assert (stored(topic, gone.id).html, stored(topic, gone.id).text) == ("", "")
    page = selectors.comment_page(topic=topic, request=PageRequest(page=1))
    assert [c.id for c in page.extra["pinned"]] == [reply.id]
    assert page.extra["moderated"] is True
    again = StringIO()
    call_command("comments_backfill", stdout=again)  # every topic; nothing left to render
    assert f"{topic.slug}: 3 comments, 0 rendered, 1 pinned, moderated" in again.getvalue()


def test_an_edit_racing_the_backfill_keeps_its_own_html(topic, old_discussion, make_editor):
    root, _, _ = old_discussion
    before = stored(topic, root.id)  # as the backfill read it
    services.comment_edit(topic=topic, comment_id=root.id, text="*edited*", user=make_editor("ed"))
    manager = services.comment_manager(topic)
    assert not manager.set_html(discussion_id=topic.discussion_id, comment=before, html="<p>stale</p>",
                                threaded=services.is_threaded(topic))
    assert stored(topic, root.id).html == "<p><em>edited</em></p>"


def test_revisions_from_before_markdown_are_rendered(topic, old_discussion, editor):
    root, _, _ = old_discussion
    services.comment_edit(topic=topic, comment_id=root.id, text="new text", user=editor)
    revisions = selectors.comment_revisions(topic=topic, comment_id=root.id, user=editor)
    assert revisions[0].text.startswith("**bold**") and BOLD in revisions[0].html


def test_unknown_topic_is_an_error():
    with pytest.raises(CommandError, match="No such topic: nope"):
        call_command("comments_backfill", "nope", stdout=StringIO())
