"""The follow graph: edges, tbc continuation documents, holes, counts and paging."""

import io
import threading

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from core.errors import InvalidInput, NotAuthenticated
from core.paging import PageRequest
from social import selectors, services
from social.managers import FOLLOWERS, FOLLOWING, FollowEdgeManager, FollowListManager

pytestmark = pytest.mark.django_db

PER_DOC = 3


@pytest.fixture(autouse=True)
def small_docs(settings):
    settings.SOCIAL_IDS_PER_DOC = PER_DOC
    settings.FEED_STRATEGY = "write"


def walk(owner, kind, page_size):
    lists = FollowListManager()
    first = lists.page(owner=owner, kind=kind, skip=0, limit=page_size)
    seen = list(first.ids)
    skip = page_size
    while skip < first.count:
        seen.extend(lists.page(owner=owner, kind=kind, skip=skip, limit=page_size).ids)
        skip += page_size
    return seen, first.count


def assert_bounded(owner, kind):
    docs = FollowListManager().documents(owner=owner, kind=kind)
    for doc in docs:
        assert len(doc["ids"]) <= PER_DOC
        assert doc["n"] == len(doc["ids"])
    if docs:
        head = docs[0]
        assert [t["_id"] for t in head["tbc"]] == [d["_id"] for d in docs[1:]]
        assert [t["n"] for t in head["tbc"]] == [len(d["ids"]) for d in docs[1:]]
        assert head["count"] == sum(len(d["ids"]) for d in docs)
    return docs


def test_continuations_are_created_and_listed_in_the_head(make_user):
    star = make_user("star")
    fans = [make_user() for _ in range(8)]
    for fan in fans:
        assert services.follow_create(follower=fan, followee=star) is True
    docs = assert_bounded(star.pk, FOLLOWERS)
    assert len(docs) == 3 and [len(d["ids"]) for d in docs] == [3, 3, 2]
    assert docs[0]["_id"] == f"followers:{star.pk}" and len(docs[0]["tbc"]) == 2
    seen, count = walk(star.pk, FOLLOWERS, 2)
    assert count == 8 and seen == [f.pk for f in reversed(fans)]  # newest first


def test_holes_from_unfollows_keep_counts_and_pages_right(make_user):
    star = make_user("star")
    fans = [make_user() for _ in range(9)]
    for fan in fans:
        services.follow_create(follower=fan, followee=star)
    for gone in (fans[0], fans[4], fans[5], fans[3]):  # the whole middle document goes
        assert services.follow_delete(follower=gone, followee=star) is True
    assert services.follow_delete(follower=fans[4], followee=star) is False
    docs = assert_bounded(star.pk, FOLLOWERS)
    assert [d["n"] for d in docs] == [2, 0, 3]
    expected = [f.pk for f in reversed(fans) if f not in (fans[0], fans[3], fans[4], fans[5])]
    for size in (1, 2, 3, 4, 5, 10):
        seen, count = walk(star.pk, FOLLOWERS, size)
        assert seen == expected and count == 5
    # New followers go to the last document with room, then to a new continuation.
    late = [make_user() for _ in range(2)]
    for fan in late:
        services.follow_create(follower=fan, followee=star)
    docs = assert_bounded(star.pk, FOLLOWERS)
    assert [d["n"] for d in docs] == [2, 0, 3, 2]
    assert walk(star.pk, FOLLOWERS, 3)[0] == [f.pk for f in reversed(late)] + expected


def test_follow_is_idempotent_and_self_follow_is_refused(make_user):
    a, b = make_user(), make_user()
    assert services.follow_create(follower=a, followee=b) is True
    assert services.follow_create(follower=a, followee=b) is False
    assert FollowListManager().sizes(owner=b.pk) == {FOLLOWERS: 1, FOLLOWING: 0}
    assert FollowListManager().sizes(owner=a.pk) == {FOLLOWERS: 0, FOLLOWING: 1}
    with pytest.raises(InvalidInput):
        services.follow_create(follower=a, followee=a)
    from django.contrib.auth.models import AnonymousUser

    with pytest.raises(NotAuthenticated):
        services.follow_create(follower=AnonymousUser(), followee=a)


def test_concurrent_double_follow_leaves_one_edge(make_user, mongo_db):
    a, b = make_user(), make_user()
    barrier = threading.Barrier(8)
    results, errors = [], []

    def follow():
        try:
            barrier.wait()
            results.append(services.follow_create(follower=a, followee=b))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=follow) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(results) == [False] * 7 + [True]
    assert mongo_db[FollowEdgeManager.collection_name].count_documents({"follower": a.pk, "followee": b.pk}) == 1
    assert FollowListManager().all_ids(owner=b.pk, kind=FOLLOWERS) == [a.pk]
    assert FollowListManager().all_ids(owner=a.pk, kind=FOLLOWING) == [b.pk]


def test_concurrent_appends_never_overfill_a_document():
    lists = FollowListManager()
    members = list(range(1000, 1040))
    barrier = threading.Barrier(8)

    def run(part):
        barrier.wait()
        for m in part:
            lists.append(owner=7, kind=FOLLOWERS, member=m)

    threads = [threading.Thread(target=run, args=(members[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert_bounded(7, FOLLOWERS)
    assert sorted(lists.all_ids(owner=7, kind=FOLLOWERS)) == members


def test_bulk_load_builds_the_same_lists_as_follows(make_user):
    while make_user().pk < 7:  # ids that cross 9 -> 10: edge ids "10:x" sort before "9:x" as text
        pass
    users = [make_user() for _ in range(6)]
    star = users[0]
    pairs = [(u.pk, star.pk) for u in users[1:]] + [(users[1].pk, users[2].pk)]
    assert services.follow_bulk_load(pairs=pairs) == 6
    assert services.follow_bulk_load(pairs=pairs) == 0  # idempotent
    docs = assert_bounded(star.pk, FOLLOWERS)
    assert len(docs) == 2
    assert walk(star.pk, FOLLOWERS, 2) == ([u.pk for u in reversed(users[1:])], 5)
    assert FollowListManager().all_ids(owner=users[1].pk, kind=FOLLOWING) == [star.pk, users[2].pk]
    # Afterwards the live path continues the same lists.
    services.follow_create(follower=users[2], followee=users[1])
    assert_bounded(users[1].pk, FOLLOWERS)


def test_selectors_page_users_newest_first(make_user):
    star = make_user("star")
    fans = [make_user() for _ in range(5)]
    for fan in fans:
        services.follow_create(follower=fan, followee=star)
    page = selectors.followers_page(user=star, request=PageRequest(page=2, page_size=2))
    assert [u.username for u in page.items] == [fans[2].username, fans[1].username]
    assert page.count == 5 and page.num_pages == 3
    following = selectors.following_page(user=fans[0], request=PageRequest(page=1, page_size=2))
    assert [u.username for u in following.items] == ["star"]
    profile = selectors.profile_get(user=star, viewer=fans[0])
    assert (profile.followers_count, profile.following_count, profile.is_following) == (5, 0, True)


@hsettings(max_examples=25)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 5), st.integers(0, 5)), max_size=40),
       page_size=st.integers(1, 4))
def test_random_follow_sequences_match_a_model(django_user_model, ops, page_size):
    users = list(django_user_model.objects.order_by("pk")[:6])
    while len(users) < 6:
        users.append(django_user_model.objects.create_user(username=f"h{len(users)}", password="x"))
    # Isolate each example: start from an empty graph.
    edges, lists = FollowEdgeManager(), FollowListManager()
    edges.collection.delete_many({})
    lists.collection.delete_many({})
    model: dict[int, list[int]] = {u.pk: [] for u in users}  # followee -> followers, oldest first
    model_following: dict[int, list[int]] = {u.pk: [] for u in users}  # follower -> followees, oldest first
    for follow, a, b in ops:
        if a == b:
            continue
        fa, fb = users[a], users[b]
        if follow:
            created = services.follow_create(follower=fa, followee=fb)
            assert created == (fa.pk not in model[fb.pk])
            if created:
                model[fb.pk].append(fa.pk)
                model_following[fa.pk].append(fb.pk)
        else:
            existed = services.follow_delete(follower=fa, followee=fb)
            assert existed == (fa.pk in model[fb.pk])
            if existed:
                model[fb.pk].remove(fa.pk)
                model_following[fa.pk].remove(fb.pk)
    for u in users:
        followers = list(reversed(model[u.pk]))
        assert walk(u.pk, FOLLOWERS, page_size) == (followers, len(followers))
        assert_bounded(u.pk, FOLLOWERS)
        following = list(reversed(model_following[u.pk]))
        assert walk(u.pk, FOLLOWING, page_size) == (following, len(following))
        assert selectors.profile_get(user=u).followers_count == len(followers)
        assert selectors.profile_get(user=u).following_count == len(following)
        assert_bounded(u.pk, FOLLOWING)


def test_rebuild_command_repairs_lists_from_the_edges(make_user):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    star, a, b = make_user("star"), make_user("a"), make_user("b")
    services.follow_create(follower=a, followee=star)
    services.follow_create(follower=b, followee=star)
    # Simulate a crash after b's edge was written but before its list entries were.
    FollowListManager().remove(owner=star.pk, kind=FOLLOWERS, member=b.pk)
    FollowListManager().remove(owner=b.pk, kind=FOLLOWING, member=star.pk)
    assert walk(star.pk, FOLLOWERS, 5) == ([a.pk], 1)
    call_command("social_rebuild_lists", "star", "b", stdout=io.StringIO())
    assert walk(star.pk, FOLLOWERS, 5) == ([b.pk, a.pk], 2)
    assert walk(b.pk, FOLLOWING, 5) == ([star.pk], 1)
    assert_bounded(star.pk, FOLLOWERS)
    with pytest.raises(CommandError):
        call_command("social_rebuild_lists", "nobody")
