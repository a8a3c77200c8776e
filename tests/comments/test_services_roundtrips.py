"""Round trips to MongoDB per service/selector call: constant whatever the page number,
the page size or the discussion size (counted with a wrapper around the database handle)."""

from unittest import mock

import pytest
from pymongo.collection import Collection

from comments import selectors, services
from core.paging import PageRequest

pytestmark = pytest.mark.django_db


class CountingDB:
    """Forwards to a Database; each collection method call is logged as (collection, method)."""

    def __init__(self, db):
        self._db, self.calls = db, []

    def _wrap(self, collection):
        calls = self.calls

        class Counted:
            def __getattr__(self, name):
                attr = getattr(collection, name)
                if not callable(attr) or name.startswith("_") or name in ("with_options",):
                    return attr

                def call(*args, **kwargs):
                    calls.append((collection.name, name))
                    return attr(*args, **kwargs)

                return call

        return Counted()

    def __getitem__(self, name):
        return self._wrap(self._db[name])

    def __getattr__(self, name):
        attr = getattr(self._db, name)
        return self._wrap(attr) if isinstance(attr, Collection) or type(attr).__name__ == "Collection" else attr

    def comment_calls(self):
        """Calls of the comments app (the social app's feed fan-out is not ours to count)."""
        return [c for c in self.calls if not c[0].startswith("social")]


@pytest.fixture
def counter(mongo_db, monkeypatch):
    counting = CountingDB(mongo_db)
    monkeypatch.setattr("core.managers.get_db", lambda stale_ok=False: counting)
    return counting


def trips(counter, fn):
    counter.calls.clear()
    fn()
    return len(counter.comment_calls())


def test_a_page_costs_the_same_on_every_page_and_size(counter, topic, make_user):
    users = [make_user() for _ in range(3)]
    roots = []
    for i in range(130):
        parent = roots[i % len(roots)].id if roots and i % 3 == 0 else None
        comment = services.comment_create(topic=topic, author=users[i % 3], text=f"c{i}", parent=parent)
        if parent is None:
            roots.append(comment)
    viewer = users[0]
    shapes = ((1, 10), (7, 10), (9, 10), (13, 10), (1, 100), (2, 100))
    anonymous = {
        (n, size): trips(counter, lambda n=n, size=size: selectors.comment_page(
            topic=topic, request=PageRequest(page=n, page_size=size), viewer=None, reply_names=False))
        for n, size in shapes
    }
    assert len(set(anonymous.values())) == 1 and max(anonymous.values()) <= 3, anonymous
    # A page that names the parents of its replies ("in reply to @name": the HTML pages outside
    # threaded order) reads those off the page in one read more, at most (two in the embedded
    # strategy: the parents' ranks, then those elements of the discussion document).
    named = {(n, size): trips(counter, lambda n=n, size=size: selectors.comment_page(
        topic=topic, request=PageRequest(page=n, page_size=size), viewer=None)) for n, size in shapes}
    extra = 2 if topic.comment_storage == "embedded" else 1
    assert all(anonymous[k] <= named[k] <= anonymous[k] + extra for k in shapes), named
    logged_in = trips(counter, lambda: selectors.comment_page(topic=topic, request=PageRequest(page=9, page_size=10),
                                                              viewer=viewer))
    # the viewer's likes on the page, and their held counter (their own shadow-held comments are merged in): one query each
    assert logged_in == named[(9, 10)] + 2


def ours(counter) -> list[str]:
    """The calls to the comments app's own collections (like edges, credit flows), in order."""
    return [c[0] for c in counter.calls if c[0] in ("comment_likes", "credit_user_flows", "credit_comment_flows")]


@pytest.fixture
def queued_notifications():
    """The request side only: notifications, the search entry, the comment activity and the
    commenter pair are queued (background work, measured in tests/notifications, tests/topics and
    tests/social)."""
    from notifications import tasks
    from search import tasks as search_tasks
    from social import tasks as social_tasks

    with mock.patch.object(tasks.notify_comment, "delay"), mock.patch.object(tasks.notify_like, "delay"), \
            mock.patch.object(search_tasks.comment_search_sync, "delay"), \
            mock.patch.object(social_tasks.comment_posted, "delay"):
        yield


def test_writes_cost_a_fixed_number_of_round_trips(counter, topic, make_user, queued_notifications):
    author, fan = make_user("author"), make_user("fan")
    comment = services.comment_create(topic=topic, author=author, text="first")
    costs = {}
    for size in (1, 40):  # the same costs in a small and a larger discussion
        while services.comment_manager(topic).count(discussion_id=topic.discussion_id) < size:
            services.comment_create(topic=topic, author=author, text="filler")
        post = trips(counter, lambda: services.comment_create(topic=topic, author=author, text="top"))
        assert ours(counter) == ["credit_user_flows"]  # one bulk_write: the day and month flows
        reply = trips(counter, lambda: services.comment_create(topic=topic, author=author, text="re", parent=comment.id))
        assert ours(counter) == ["credit_user_flows"]
        like = trips(counter, lambda fan=fan: services.comment_like(topic=topic, comment_id=comment.id, user=fan))
        # the edge switched on (pending), the credit, the edge settled once comment_liked was sent
        assert ours(counter) == ["comment_likes", "credit_comment_flows", "comment_likes"]
        again = trips(counter, lambda fan=fan: services.comment_like(topic=topic, comment_id=comment.id, user=fan))
        # the edge exists: whether it is pending is read (an interrupted like is finished), nothing is written
        assert ours(counter) == ["comment_likes", "comment_likes"]
        unlike = trips(counter, lambda fan=fan: services.comment_unlike(topic=topic, comment_id=comment.id, user=fan))
        assert ours(counter) == ["comment_likes"]
        services.comment_like(topic=topic, comment_id=comment.id, user=fan)
        services.comment_unlike(topic=topic, comment_id=comment.id, user=fan)
        permalink = trips(counter, lambda: selectors.comment_page_of(
            topic=topic, comment=selectors.comment_get(topic=topic, comment_id=comment.id), order=topic.comment_order))
        costs[size] = (post, reply, like, again, unlike, permalink)
        fan = make_user()
    assert costs[1] == costs[40], costs
    # The array strategies also move the liked comment's hot rank (comments/managers/ranks.py): one more write;
    # every write first reads the discussion's move document (comments/moves.py): one more read;
    # a like settles its edge once comment_liked was sent: one more write.
    assert max(costs[40]) <= (8 if topic.comment_storage == "document" else 9), costs


def test_credit_summary_is_two_round_trips(counter, make_user):
    user = make_user()
    assert trips(counter, lambda: selectors.credit_summary(user=user)) == 2
