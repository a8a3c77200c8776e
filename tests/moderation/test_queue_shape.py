"""Every view of the site-wide queue examines about a page of index keys and documents,
at page 1 and at the last page (by cursor), at two queue sizes: the engine's own explain
(as tests/query_shape uses it) finds no scan, no in-memory sort and no growth with depth
or size."""

from datetime import timedelta

import pytest
from bson import ObjectId
from django.conf import settings

from tests.query_shape.test_hot_paths import PAGE, SIZES, SLACK, assert_floor, counter, measure  # noqa: F401  (fixture)

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(bool(settings.MONGODB_URI), reason="figures of the embedded engine"),
]

VIEWS = [("pending", {}), ("all", {}), ("pending", {"topic": "mine"}), ("all", {"author": "writer"}),
         ("pending", {"q": "needle"})]


@pytest.mark.parametrize("view,filters", VIEWS, ids=[f"{v}-{'-'.join(f) or 'unfiltered'}" for v, f in VIEWS])
def test_queue_views_examine_a_page_at_any_depth_and_size(counter, make_topic, make_user, editor, view, filters):  # noqa: F811
    from comments.services import comment_create
    from moderation import selectors, services

    figures = {}
    for size in SIZES:
        with counter.paused():
            services.ModerationQueueManager().collection.delete_many({})
            mine = make_topic("document", title=f"Queue {size}")
            other = make_topic("bucketed", "chronological", title=f"Other {size}")
            writer = make_user(f"writer{size}")
            noise = make_user()
            for user in (writer, noise):
                services.user_set_premoderation(username=user.username, premoderated=True, moderator=editor)
            for i in range(size):  # the filtered rows, among as many others
                comment_create(topic=mine, author=writer, text=f"needle {i}")
                comment_create(topic=other, author=noise, text=f"hay {i}")
            params = {**filters}
            if "topic" in params:
                params["topic"] = mine.slug
            if "author" in params:
                params["author"] = writer.username
            cursors, cursor = [None], None
            while True:
                cursor = selectors.queue_page(viewer=editor, view=view, cursor=cursor, size=str(PAGE), **params).next_cursor
                if cursor is None:
                    break
                cursors.append(cursor)
        for depth, cursor in ((1, None), (len(cursors), cursors[-1])):
            m, page = measure(counter, lambda c=cursor, p=params: selectors.queue_page(
                viewer=editor, view=view, cursor=c, size=str(PAGE), **p))
            assert page.items
            figures[(size, depth)] = m
    assert_floor(figures, what=f"moderation queue {view} {filters}")


def test_an_authors_held_comments_examine_a_page_at_any_depth_and_size(counter, make_topic, make_user, editor):  # noqa: F811
    """The topic page's "your comments awaiting moderation": one walk of
    author_topic_state_newest and one counter read, among other authors' and topics' held."""
    from comments.services import comment_create
    from moderation import selectors, services

    figures = {}
    for size in SIZES:
        with counter.paused():
            services.ModerationQueueManager().collection.delete_many({})
            mine = make_topic("document", title=f"Held {size}")
            other = make_topic("embedded", title=f"Other held {size}")
            writer, noise = make_user(f"writer{size}"), make_user()
            for user in (writer, noise):
                services.user_set_premoderation(username=user.username, premoderated=True, moderator=editor)
            for i in range(size):  # the author's held rows here, among theirs elsewhere and others' here
                comment_create(topic=mine, author=writer, text=f"mine {i}")
                comment_create(topic=other, author=writer, text=f"elsewhere {i}")
                comment_create(topic=mine, author=noise, text=f"noise {i}")
            cursors, cursor = [None], None
            while True:
                cursor = selectors.held_for_viewer(topic=mine, viewer=writer, cursor=cursor, size=str(PAGE)).next_cursor
                if cursor is None:
                    break
                cursors.append(cursor)
        for depth, cursor in ((1, None), (len(cursors), cursors[-1])):
            m, page = measure(counter, lambda c=cursor, t=mine, w=writer: selectors.held_for_viewer(
                topic=t, viewer=w, cursor=c, size=str(PAGE)))
            assert page.items and page.count == size
            figures[(size, depth)] = m
    assert_floor(figures, what="an author's held comments on a topic")


def test_the_new_user_check_counts_within_its_bound_whatever_the_author_has_held(counter, make_topic, make_user,  # noqa: F811
                                                                                 editor, settings):
    """`MODERATION_NEW_USER_COMMENTS`: "has this author had N comments approved?" is a covered
    count over (author, held, status) that stops at N, however many the author has waiting."""
    from comments.services import comment_create
    from moderation import services

    settings.MODERATION_NEW_USER_COMMENTS = 3
    figures = {}
    for size in SIZES:
        with counter.paused():
            services.ModerationQueueManager().collection.delete_many({})
            topic = make_topic("document", title=f"New users {size}")
            writer = make_user(f"newcomer{size}")
            first = [comment_create(topic=topic, author=writer, text=f"first words {i}") for i in range(5)]
            services.comment_moderate(topic=topic, comment_ids=[c.id for c in first], action="approve", moderator=editor)
            services.user_set_premoderation(username=writer.username, premoderated=True, moderator=editor)
            for i in range(size):  # then many more waiting, newer than the approved ones
                comment_create(topic=topic, author=writer, text=f"more words {i}")
            queue = services.ModerationQueueManager()
            done = dict(queue.collection.find_one({"author": writer.pk, "state": "done"}))
            for i in range(size):  # and as many stored comments of theirs reported, then cleared (done, not held)
                queue.collection.insert_one({**done, "_id": ObjectId(), "held": False, "key": f"{topic.pk}:x{i}",
                                             "updated": done["updated"] + timedelta(seconds=i + 1)})
        m, _ = measure(counter, lambda w=writer: services.ModerationQueueManager().count_approved(author_id=w.pk,
                                                                                                 at_least=3))
        assert m.docs_examined == 0 and m.keys_examined <= 3 + SLACK, (size, m.keys_examined, m.plans)
        figures[size] = m.keys_examined
    assert figures[SIZES[0]] == figures[SIZES[1]]
