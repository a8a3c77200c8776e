"""A small site in which every write has consequences, and the invariants checked after each fault.

People: alice (wrote the parent comment P), bob (replied with Q), carol, dave (no comments) and
the editor who wrote the topic. Follows: bob -> alice, alice -> bob, carol -> bob, alice ->
editor. Likes: carol likes P. Everyone has an e-mail address (notification e-mails go out).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from core.mongo import get_db


@dataclass
class World:
    topic: object
    editor: object
    alice: object
    bob: object
    carol: object
    dave: object
    p: object  # alice's comment
    q: object  # bob's reply to P
    extra: dict = field(default_factory=dict)

    @property
    def users(self):
        return [self.editor, self.alice, self.bob, self.carol, self.dave]


def build_world(*, storage: str, users: dict, topic) -> World:
    """The comments, follows and like of the world, in the database in use (its users and topic exist)."""
    from comments.services import comment_create, comment_like
    from social.services import follow_create

    alice, bob, carol, editor = users["alice"], users["bob"], users["carol"], users["editor"]
    p = comment_create(topic=topic, author=alice, text="lorem parent words by alice")
    q = comment_create(topic=topic, author=bob, text="lorem reply words by bob", parent=p.id)
    for follower, followee in ((bob, alice), (alice, bob), (carol, bob), (alice, editor)):
        follow_create(follower=follower, followee=followee)
    comment_like(topic=topic, comment_id=p.id, user=carol)
    return World(topic=topic, editor=editor, alice=alice, bob=bob, carol=carol, dave=users["dave"], p=p, q=q)


class Templates:
    """One world per storage strategy, built once per test module: its people and topics are
    committed to the test database (removed at the end), its MongoDB data is kept in a template
    database per strategy and copied into each test's fresh database (`World` for the test)."""

    NAMES = ("alice", "bob", "carol", "dave")

    def __init__(self):
        self.users: dict[str, int] = {}
        self.topics: dict[str, int] = {}
        self.databases: dict[str, str] = {}
        self.comments: dict[str, tuple] = {}

    def build(self, setups) -> None:
        """One world per setup: a comment storage, or "document+<feed>" (built and run with that
        FEED_STRATEGY, tests/faults/scenarios.py)."""
        import uuid

        from django.contrib.auth import get_user_model
        from django.test import override_settings

        from core.managers import ensure_indexes
        from moderation.services import editor_add
        from tests.faults.harness import TaskQueue
        from tests.faults.scenarios import split_setup
        from topics.services import topic_create

        User = get_user_model()
        people = {name: User.objects.create_user(username=f"{name}", password="pw-for-tests",
                                                 email=f"{name}@example.org") for name in self.NAMES}
        editor = User.objects.create_user(username="editor", password="pw-for-tests", is_staff=True,
                                          email="editor@example.org")
        editor_add(user=editor)
        people["editor"] = editor
        from allauth.account.models import EmailAddress

        # Confirmed addresses: the site e-mails only those (accounts.selectors.notification_email).
        EmailAddress.objects.bulk_create([EmailAddress(user=u, email=u.email, verified=True, primary=True)
                                          for u in people.values()])
        self.users = {name: user.pk for name, user in people.items()}
        for setup in setups:
            storage, feed = split_setup(setup)
            name = self.databases[setup] = f"test_faults_{storage}_{feed}_{uuid.uuid4().hex[:8]}"
            with override_settings(MONGODB_DB=name, FEED_STRATEGY=feed), pytest_monkeypatch() as mp:
                ensure_indexes(get_db())
                queue = TaskQueue()
                queue.install(mp)
                topic = topic_create(author=editor, title=f"Faults {setup}", comment_storage=storage)
                self.topics[setup] = topic.pk
                world = build_world(storage=storage, users=people, topic=topic)
                queue.drain()
                self.comments[setup] = (world.p, world.q)

    def copy_file(self, storage: str, name: str) -> None:
        """The embedded engine: the template's file becomes database `name`'s (before it is opened)."""
        import sqlite3

        from core.mongo import get_client

        client = get_client()
        source = sqlite3.connect(client[self.databases[storage]].path)
        target = sqlite3.connect(client._file(name))
        try:
            source.backup(target)
        finally:
            source.close()
            target.close()

    def copy_documents(self, storage: str, db) -> None:
        """A server: the template's documents into `db` (its indexes made already)."""
        from django.test import override_settings

        from core.copy import copy_database

        with override_settings(MONGODB_DB=self.databases[storage]):
            source = get_db()
        copy_database(source, db)

    def world(self, storage: str) -> World:
        """The world of `storage` (its MongoDB data is in the test's database: conftest.mongo_db)."""
        from django.contrib.auth import get_user_model

        from topics.models import Topic

        users = get_user_model().objects.in_bulk(list(self.users.values()))
        people = {name: users[pk] for name, pk in self.users.items()}
        p, q = self.comments[storage]
        return World(topic=Topic.objects.select_related("author").get(pk=self.topics[storage]), editor=people["editor"],
                     alice=people["alice"], bob=people["bob"], carol=people["carol"], dave=people["dave"], p=p, q=q)

    def remove(self) -> None:
        from django.contrib.auth import get_user_model

        from core.mongo import drop_db
        from topics.models import Topic

        for name in self.databases.values():
            drop_db(name)
        Topic.objects.filter(pk__in=list(self.topics.values())).delete()
        get_user_model().objects.filter(pk__in=list(self.users.values())).delete()


def pytest_monkeypatch():
    import pytest

    return pytest.MonkeyPatch.context()


# --- invariants -----------------------------------------------------------------------------


@dataclass
class Checked:
    """How many invariants one check looked at, by name."""

    counts: Counter = field(default_factory=Counter)

    def check(self, name: str, ok: bool, message: str, failures: list[str]) -> None:
        self.counts[name] += 1
        if not ok:
            failures.append(f"{name}: {message}")


def stored_comments(topic) -> list:
    from comments.selectors import comment_stored_pages

    return [c for page in comment_stored_pages(topic=topic, page_size=500) for c in page]


def check_invariants(world: World, checked: Checked) -> list[str]:
    """Every invariant of the issue, read directly from the stores (not through the integrity
    command): returns what is wrong, one line each."""
    from comments.managers.likes import CommentLikeManager
    from comments.selectors import comment_manager
    from notifications.services import subject_key
    from search.selectors import comment_search
    from social.feeds import get_feed
    from social.feeds.base import Activity
    from social.managers.lists import FOLLOWERS, FOLLOWING, FollowListManager
    from social.selectors import visible_activities

    failures: list[str] = []
    db = get_db()
    topic = world.topic
    comments = stored_comments(topic)
    ids = [c.id for c in comments]
    # Count equals the items listed; seq dense 1..N in chronological order; one row per id.
    count = comment_manager(topic).count(discussion_id=topic.discussion_id)
    checked.check("count", count == len(comments), f"count {count} for {len(comments)} stored comments", failures)
    seqs = [c.seq for c in comments]
    checked.check("seq", seqs == list(range(1, len(comments) + 1)), f"seq {seqs}", failures)
    checked.check("ids", len(set(ids)) == len(ids), f"ids twice: {ids}", failures)
    # Search finds exactly the visible comments ("lorem" is in every text this world writes).
    visible = sorted(c.id for c in comments if c.status == "visible")
    found = sorted(h.hit.comment_id for h in comment_search(q="lorem", page_size=100)[0])
    checked.check("search", found == visible, f"search finds {found}, visible {visible}", failures)
    # The commenter pairs ("N people you follow commented") name the authors of visible comments, no others.
    from social.managers.commenters import DiscussionCommenterManager

    paired = sorted(author for author, _ in DiscussionCommenterManager().pairs(discussion_id=topic.discussion_id))
    commenters = sorted({c.author.id for c in comments if c.status == "visible" and c.author and c.author.id})
    checked.check("commenter pairs", paired == commenters, f"pairs {paired}, visible authors {commenters}", failures)
    # Likes equal the like edges.
    edges = CommentLikeManager().active_likes(discussion_id=topic.discussion_id)
    for c in comments:
        checked.check("likes", c.likes == len(edges.get(c.id, [])),
                      f"{c.id} likes {c.likes} for {len(edges.get(c.id, []))} edges", failures)
    # Follow lists equal the edges.
    pairs = {(d["follower"], d["followee"]) for d in db.social_follow_edges.find({}, {"follower": 1, "followee": 1})}
    lists = FollowListManager()
    for user in world.users:
        for kind in (FOLLOWERS, FOLLOWING):
            listed = sorted(lists.all_ids(owner=user.pk, kind=kind))
            checked.check("follow list ids", len(set(listed)) == len(listed), f"{user} {kind} twice: {listed}", failures)
            truth = sorted(a for a, b in pairs if b == user.pk) if kind == FOLLOWERS else \
                sorted(b for a, b in pairs if a == user.pk)
            checked.check("follow lists", listed == truth, f"{user} {kind} {listed}, edges {truth}", failures)
            size = lists.sizes(owner=user.pk)[kind]
            checked.check("follow counts", size == len(listed), f"{user} {kind} count {size} for {listed}", failures)
    # Each event in each notification group once; unread equals the unread listed.
    groups = list(db.notifications.find({}))
    for group in groups:
        events = group.get("events", [])
        checked.check("notification events once", len(set(events)) == len(events), f"{group['_id']}: {events}",
                      failures)
        checked.check("notification count", group.get("count") == len(events),
                      f"{group['_id']}: count {group.get('count')} for {len(events)} events", failures)
    for user in world.users:
        unread = sum(1 for g in groups if g["r"] == user.pk and not g.get("hidden") and not g.get("read"))
        counter = (db.notification_counters.find_one({"_id": user.pk}) or {}).get("unread", 0)
        checked.check("unread", counter == unread, f"{user}: counter {counter}, unread groups {unread}", failures)
    events = Counter(e for g in groups for e in g.get("events", []))
    by_id = {c.id: c for c in comments}
    for c in comments:  # a reply to someone else's visible comment notifies its author, once
        parent = by_id.get(c.parent) if c.parent else None
        if c.status == "visible" and parent is not None and parent.status == "visible" \
                and parent.author.id != c.author.id:
            event = f"reply:{subject_key(topic.discussion_id, c.id)}"
            checked.check("reply notified once", events[event] == 1, f"{event} x{events[event]}", failures)
    for c in comments:
        for liker, _ in edges.get(c.id, []):
            if c.status == "visible" and liker != c.author.id:
                event = f"like:{subject_key(topic.discussion_id, c.id)}:{liker}"
                checked.check("like notified once", events[event] == 1, f"{event} x{events[event]}", failures)
    for follower, _followee in pairs:
        event = f"follow:{follower}"
        checked.check("follow notified", events[event] >= 1, f"{event} x{events[event]}", failures)
    # Each stored comment is one activity in its author's log, and in each follower's feed once.
    activities = list(db.social_activities.find({}))
    logged = Counter((a["type"], a.get("comment_id") or a.get("topic_id") or a.get("target_id"), a["author"])
                     for a in activities)
    for c in comments:
        key = ("comment", c.id, c.author.id)
        checked.check("activity once", logged[key] == 1, f"comment activity {c.id} x{logged[key]}", failures)
    feeds = feed_views(world)
    for owner, (copies, shown) in feeds.items():
        for aid, n in copies.items():
            checked.check("feed item once", n == 1, f"feed of {owner}: activity {aid} stored x{n}", failures)
        for aid, n in shown.items():
            checked.check("feed page once", n == 1, f"feed of {owner}: activity {aid} shown x{n}", failures)
    muted = {(d["muter"], d["muted"]) for d in db.social_mutes.find({})}
    pushed, people = get_feed().name != "read", {u.pk: u for u in world.users}
    for a in activities:
        for follower, followee in pairs:
            if followee == a["author"] and (follower, followee) not in muted:
                copies, shown = feeds[follower]
                if not pushed and not visible_activities([Activity.from_fields(a, id=a["_id"])],
                                                         viewer=people[follower]):
                    continue  # fan-out on read shows only what the reader may see: nothing is stored
                n = (copies if pushed else shown)[str(a["_id"])]
                what = a.get("comment_id") or a.get("topic_id") or a.get("target_id")
                checked.check("feed delivered", n == 1, f"feed of {follower}: {a['type']} {what} x{n}", failures)
    return failures


def feed_views(world: World) -> dict[int, tuple[Counter, Counter]]:
    """Per person: the copies of each activity in their pushed feed (FEED_STRATEGY `write` or
    `bucket`; none for `read`) and how often each activity is shown walking their feed's pages
    (every strategy: the pushed part, pulled authors merged in, or the log read for `read`; what
    the reader may see)."""
    from social.feeds import get_feed
    from social.selectors import feed_page

    feed, views = get_feed(), {}
    for user in world.users:
        copies = Counter(aid for aid, _ in feed.delivered(owner=user.pk))
        shown, cursor = Counter(), None
        while True:
            page = feed_page(user=user, cursor=cursor, limit=3)  # small pages: the cursors are walked too
            shown.update(a.id for a in page.items)
            cursor = page.next_cursor
            if cursor is None:
                break
        views[user.pk] = (copies, shown)
    return views


def check_feeds_once(world: World, checked: Checked) -> list[str]:
    """No activity stored or shown twice in anyone's feed, before any repair: a delivery repeated by
    a retry or a redelivered task must not need `integrity --repair` (`dedupe`) to be right."""
    failures: list[str] = []
    for owner, (copies, shown) in feed_views(world).items():
        for aid in copies + shown:
            checked.check("feed once before repair", copies[aid] <= 1 and shown[aid] <= 1,
                          f"feed of {owner}: activity {aid} stored x{copies[aid]}, shown x{shown[aid]}", failures)
    return failures
