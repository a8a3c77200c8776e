"""Edit, delete and revisions through the services and the API, in every layout:
who may, the edit window, tombstones, revisions, html rendered at write time, and the
round trips of an edit and a delete (asserted per strategy; the figures are in docs/comments.md)."""

from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from comments import selectors, services
from comments.managers.base import DELETED
from comments.managers.revisions import CommentRevisionManager
from core.errors import Forbidden, Gone, NotAuthenticated
from tests.comments.support import stored
from tests.comments.test_services_roundtrips import counter, trips  # noqa: F401  (counter is a fixture)

pytestmark = pytest.mark.django_db

# MongoDB round trips of the services, per storage strategy: read the comment (1; embedded: 2,
# its rank then only its element, not the whole discussion document), write
# the revision (1, edit only), change it in place (1), drop its revisions (1, delete only);
# a deletion also writes the comment status index first (1: feeds drop the excerpt).
# The comment search index and the moderation queue's entry (its text, its deletion) are queued
# tasks (search/receivers.py, moderation/receivers.py), not counted here. An edit
# also records the new text in the status index (1: feed and profile excerpts show the current text).
# Every write first reads the discussion's move document (1: comments/moves.py routes it).
EDIT_TRIPS = {"document": 5, "embedded": 6, "bucketed": 5}
# A deletion also sets the discussion's `moderated` hint: in the same update in an embedded
# discussion, one more update of the counter document in the other two. The bucketed strategy also
# takes the author off the comment's rank (the following order's author index, ranks.py).
DELETE_TRIPS = {"document": 6, "embedded": 6, "bucketed": 7}


def url(topic, *parts):
    return "/".join([f"/api/topics/{topic.slug}/comments", *parts]) + "/"


@pytest.fixture
def bob(make_user):
    return make_user("bob")


def test_html_is_rendered_at_write_time_and_stored(topic, alice, bob):
    c = services.comment_create(topic=topic, author=alice, text="hi @bob and @ghost, see https://example.com <b>x</b>")
    assert '<a href="/u/bob/" class="mention" rel="nofollow ugc">@bob</a>' in c.html and "/u/ghost/" not in c.html
    assert '<a href="https://example.com" rel="nofollow ugc">' in c.html and "<b>" not in c.html
    stored_comment = selectors.comment_get(topic=topic, comment_id=c.id)
    assert stored_comment.html == c.html and stored_comment.edited is None


def test_author_edits_within_the_window_and_revisions_are_kept(topic, alice, bob, editor):
    c = services.comment_create(topic=topic, author=alice, text="first")
    e1 = services.comment_edit(topic=topic, comment_id=c.id, text="second *try*", user=alice)
    assert (e1.text, e1.html) == ("second *try*", "<p>second <em>try</em></p>") and e1.edited is not None
    e2 = services.comment_edit(topic=topic, comment_id=c.id, text="third", user=editor)  # editors: any comment
    got = selectors.comment_get(topic=topic, comment_id=c.id)
    assert (got.text, got.edited) == ("third", e2.edited)
    history = selectors.comment_revisions(topic=topic, comment_id=c.id, user=alice)
    assert [(r.text, r.editor.name) for r in history] == [("second *try*", "editor"), ("first", "alice")]
    assert history[0].html == "<p>second <em>try</em></p>"
    with pytest.raises(Forbidden):
        selectors.comment_revisions(topic=topic, comment_id=c.id, user=bob)
    with pytest.raises(Forbidden):
        services.comment_edit(topic=topic, comment_id=c.id, text="not mine", user=bob)
    with pytest.raises(NotAuthenticated):
        services.comment_edit(topic=topic, comment_id=c.id, text="anon", user=None)


def test_the_edit_window_closes_for_the_author_not_for_editors(topic, alice, editor, settings, monkeypatch):
    c = services.comment_create(topic=topic, author=alice, text="first")
    settings.COMMENTS_EDIT_WINDOW = 900
    later = timezone.now() + timedelta(seconds=901)
    monkeypatch.setattr("comments.services.timezone.now", lambda: later)
    with pytest.raises(Forbidden, match="15 minutes"):
        services.comment_edit(topic=topic, comment_id=c.id, text="too late", user=alice)
    assert services.comment_edit(topic=topic, comment_id=c.id, text="by an editor", user=editor).text == "by an editor"


def test_delete_leaves_a_tombstone_and_removes_text_and_revisions(topic, alice, bob, editor):
    root = services.comment_create(topic=topic, author=alice, text="root")
    reply = services.comment_create(topic=topic, author=bob, text="reply", parent=root.id)
    services.comment_edit(topic=topic, comment_id=root.id, text="root, edited", user=alice)
    with pytest.raises(Forbidden):
        services.comment_delete(topic=topic, comment_id=root.id, user=bob)
    gone = services.comment_delete(topic=topic, comment_id=root.id, user=alice)
    assert (gone.status, gone.text, gone.html) == (DELETED, "", "")
    assert CommentRevisionManager().history(discussion_id=topic.discussion_id, comment_id=root.id) == []
    for user in (alice, editor, bob):  # gone for everyone, and the answer says so
        with pytest.raises(Gone, match="deleted"):
            selectors.comment_revisions(topic=topic, comment_id=root.id, user=user)
    for viewer in (None, alice, editor):  # a tombstone for everyone, editors included
        seen = selectors.comment_get(topic=topic, comment_id=root.id, viewer=viewer)
        assert (seen.status, seen.text, seen.html, seen.author) == (DELETED, "", "", None)
    assert stored(topic) == 2
    assert [c.id for c in selectors.comment_thread(topic=topic, comment_id=root.id)] == [root.id, reply.id]
    with pytest.raises(Forbidden):
        services.comment_edit(topic=topic, comment_id=root.id, text="back", user=alice)
    assert services.comment_delete(topic=topic, comment_id=root.id, user=alice).status == DELETED  # idempotent
    services.comment_delete(topic=topic, comment_id=reply.id, user=editor)  # editors delete any comment
    assert selectors.comment_get(topic=topic, comment_id=reply.id).status == DELETED


def test_round_trips_of_an_edit_and_a_delete(topic, alice, counter):  # noqa: F811  (the fixture)
    c = services.comment_create(topic=topic, author=alice, text="first")
    services.comment_create(topic=topic, author=alice, text="reply", parent=c.id)
    from moderation import tasks as moderation_tasks
    from notifications import tasks as notification_tasks
    from search import tasks as search_tasks
    from social import tasks as social_tasks

    # The request's own round trips: the search entry (both), the moderation queue's text (the edit)
    # and deletion (the delete) and the hiding of notifications about the comment (the deletion) are
    # queued (background work, measured in tests/topics, tests/moderation and tests/notifications).
    with mock.patch.object(search_tasks.comment_search_sync, "delay") as indexed, \
            mock.patch.object(moderation_tasks.entry_text_sync, "delay") as texted, \
            mock.patch.object(moderation_tasks.entry_deletion_sync, "delay") as followed, \
            mock.patch.object(social_tasks.commenters_refresh, "delay") as commenters:
        edit = trips(counter, lambda: services.comment_edit(topic=topic, comment_id=c.id, text="second", user=alice))
        with mock.patch.object(notification_tasks.subject_visibility, "delay") as queued:
            delete = trips(counter, lambda: services.comment_delete(topic=topic, comment_id=c.id, user=alice))
    assert [call.args for call in indexed.call_args_list] == [(topic.pk, c.id), (topic.pk, c.id)]
    texted.assert_called_once_with(topic.pk, c.id)
    followed.assert_called_once_with(topic.pk, c.id, "visible", alice.pk)
    queued.assert_called_with(topic.discussion_id, c.id, False)
    commenters.assert_called_once_with(topic.pk, alice.pk)  # whether alice still commented visibly there
    assert (edit, delete) == (EDIT_TRIPS[topic.comment_storage], DELETE_TRIPS[topic.comment_storage]), counter.calls


def test_api_patch_delete_revisions(api_client, topic, alice, bob, editor):
    api_client.force_authenticate(alice)
    c = api_client.post(url(topic), {"text": "first"}, format="json").json()
    r = api_client.patch(url(topic, c["id"]), {"text": "**second**"}, format="json")
    assert r.status_code == 200, r.content
    assert r.json()["html"] == "<p><strong>second</strong></p>" and r.json()["edited"]
    assert api_client.patch(url(topic, c["id"]), {"text": ""}, format="json").status_code == 400
    assert api_client.patch(url(topic, c["id"]), {"text": {"$gt": ""}}, format="json").status_code == 400
    revisions = api_client.get(url(topic, c["id"], "revisions")).json()
    assert revisions["count"] == 1 and revisions["results"][0]["text"] == "first"
    api_client.force_authenticate(bob)
    assert api_client.patch(url(topic, c["id"]), {"text": "x"}, format="json").status_code == 403
    assert api_client.delete(url(topic, c["id"])).status_code == 403
    assert api_client.get(url(topic, c["id"], "revisions")).status_code == 403
    api_client.force_authenticate(None)
    assert api_client.patch(url(topic, c["id"]), {"text": "x"}, format="json").status_code in (401, 403)
    assert api_client.delete(url(topic, c["id"])).status_code in (401, 403)
    assert api_client.delete(url(topic, "nosuchid")).status_code in (401, 403)
    api_client.force_authenticate(editor)
    assert api_client.delete(url(topic, "nosuchid")).status_code == 404
    assert api_client.delete(url(topic, c["id"])).status_code == 204
    detail = api_client.get(url(topic, c["id"])).json()
    assert (detail["status"], detail["text"], detail["html"], detail["author"]) == ("deleted", "", "", None)
    assert api_client.get(url(topic)).json()["count"] == 1


def test_the_revisions_of_a_deleted_comment_are_gone_for_its_author_too_and_the_api_says_so(api_client, topic, alice,
                                                                                            editor):
    api_client.force_authenticate(alice)
    c = api_client.post(url(topic), {"text": "first"}, format="json").json()
    api_client.patch(url(topic, c["id"]), {"text": "second"}, format="json")
    assert api_client.get(url(topic, c["id"], "revisions")).json()["count"] == 1
    assert api_client.delete(url(topic, c["id"])).status_code == 204
    for user in (alice, editor):
        api_client.force_authenticate(user)
        r = api_client.get(url(topic, c["id"], "revisions"))
        assert r.status_code == 410, (user, r.content)
        assert r.json() == {"detail": "This comment was deleted: its text and its earlier versions were deleted "
                                      "with it.", "code": "gone"}
    assert api_client.get(url(topic, "nosuchid", "revisions")).status_code == 404
