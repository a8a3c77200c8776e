"""What only the embedded strategy does: layouts, the size bound, race-safe creation."""

import bson
import pytest

from comments.managers.base import CHRONOLOGICAL, HOT, THREADED, Author, DiscussionFull
from comments.managers.embedded import EmbeddedCommentManager
from comments.managers.fields import element_parent
from comments.managers.layout import charge, element_paths
from core.paging import PageRequest
from tests.contract.conftest import CountingDB, new_discussion_id

ALICE = Author(id=1, name="alice")


def test_chronological_topic_uses_one_flat_array(mongo_db):
    manager = EmbeddedCommentManager(db=mongo_db)
    d = new_discussion_id()
    a = manager.post(discussion_id=d, author=ALICE, text="a")
    b = manager.post(discussion_id=d, author=ALICE, text="b", parent=a)
    doc = mongo_db.comment_discussions.find_one({"_id": d})
    assert doc["layout"] == "flat" and doc["count"] == 2 and "replies" not in doc
    assert [e["id"] for e in doc["comments"]] == [a.id, b.id] and element_parent(doc["comments"][1]) == a.id
    assert doc["bytes"] == sum(charge(e) for e in doc["comments"])
    assert len(bson.encode(doc)) <= doc["bytes"] + 100  # an upper bound, array keys included
    assert len(a.id) == 12


def test_threaded_topic_nests_replies_under_their_parent(mongo_db):
    manager = EmbeddedCommentManager(db=mongo_db)
    d = new_discussion_id()
    a = manager.post(discussion_id=d, author=ALICE, text="a", threaded=True)
    b = manager.post(discussion_id=d, author=ALICE, text="b", threaded=True)
    a1 = manager.post(discussion_id=d, author=ALICE, text="a1", parent=a, threaded=True)
    b1 = manager.post(discussion_id=d, author=ALICE, text="b1", parent=b, threaded=True)
    b11 = manager.post(discussion_id=d, author=ALICE, text="b11", parent=b1, threaded=True)
    doc = mongo_db.comment_discussions.find_one({"_id": d})
    assert doc["layout"] == "nested" and doc["count"] == 5 and "comments" not in doc
    assert doc["replies"][1]["replies"][0]["replies"][0]["id"] == b11.id
    assert element_paths(doc) == {a.id: "replies.0", b.id: "replies.1", a1.id: "replies.0.replies.0",
                                  b1.id: "replies.1.replies.0", b11.id: "replies.1.replies.0.replies.0"}


def test_the_layout_chosen_first_is_kept_whatever_later_calls_say(mongo_db):
    manager = EmbeddedCommentManager(db=mongo_db)
    d = new_discussion_id()
    a = manager.post(discussion_id=d, author=ALICE, text="a", threaded=True)
    b = manager.post(discussion_id=d, author=ALICE, text="b", parent=a, threaded=False)
    c = manager.post(discussion_id=d, author=ALICE, text="c", threaded=False)
    doc = mongo_db.comment_discussions.find_one({"_id": d})
    assert doc["layout"] == "nested" and [e["id"] for e in doc["replies"]] == [a.id, c.id]
    assert doc["replies"][0]["replies"][0]["id"] == b.id
    assert manager.add_like(discussion_id=d, comment_id=b.id, username="u", threaded=False)
    assert manager.get(discussion_id=d, comment_id=b.id, threaded=False).likes == 1
    page = manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(), threaded=False)
    assert [x.id for x in page.items] == [a.id, b.id, c.id]


def test_posting_past_the_size_bound_raises_and_stores_nothing(mongo_db, settings):
    manager = EmbeddedCommentManager(db=mongo_db)
    for threaded in (False, True):
        d = new_discussion_id()
        settings.COMMENTS_EMBEDDED_MAX_BYTES = 1500
        posted = []
        with pytest.raises(DiscussionFull):
            for n in range(100):
                parent = posted[-1] if threaded and posted else None
                posted.append(manager.post(discussion_id=d, author=ALICE, text=f"comment {n} " + "x" * 100, parent=parent,
                                           threaded=threaded))
        assert 3 <= len(posted) < 100
        before = mongo_db.comment_discussions.find_one({"_id": d})
        assert before["count"] == len(posted) and before["bytes"] <= 1500
        with pytest.raises(DiscussionFull):
            # Where the refused post went, and longer: it cannot fit either.
            manager.post(discussion_id=d, author=ALICE, text="one more " + "x" * 200, parent=posted[-1] if threaded else None,
                         threaded=threaded)
        assert mongo_db.comment_discussions.find_one({"_id": d}) == before
        # A short comment that still fits is accepted, up to the bound.
        settings.COMMENTS_EMBEDDED_MAX_BYTES = before["bytes"] + 10_000
        manager.post(discussion_id=d, author=ALICE, text="room again", threaded=threaded)
        assert manager.count(discussion_id=d) == len(posted) + 1


def test_a_comment_larger_than_the_bound_is_refused_even_first(mongo_db, settings):
    settings.COMMENTS_EMBEDDED_MAX_BYTES = 100
    manager = EmbeddedCommentManager(db=mongo_db)
    d = new_discussion_id()
    with pytest.raises(DiscussionFull):
        manager.post(discussion_id=d, author=ALICE, text="too long for a hundred bytes")
    assert manager.count(discussion_id=d) == 0


def test_first_post_survives_a_concurrent_creation(mongo_db, monkeypatch):
    """Another writer creates the discussion between our failed push and our insert."""
    manager = EmbeddedCommentManager(db=mongo_db)
    d = new_discussion_id()
    original_insert = type(mongo_db.comment_discussions).insert_one
    rival_done = []

    def insert_after_rival(self, document, *args, **kwargs):
        if not rival_done:
            rival_done.append(True)
            original_insert(self, dict(document), *args, **kwargs)  # the rival's insert wins
        return original_insert(self, document, *args, **kwargs)  # ours then hits the duplicate _id

    monkeypatch.setattr(type(mongo_db.comment_discussions), "insert_one", insert_after_rival)
    c = manager.post(discussion_id=d, author=ALICE, text="first")
    assert rival_done and manager.count(discussion_id=d) == 1
    assert manager.get(discussion_id=d, comment_id=c.id) == c


def test_a_flat_chronological_page_is_one_round_trip_carrying_only_its_slice(mongo_db):
    counter = CountingDB(mongo_db)
    manager = EmbeddedCommentManager(db=counter, read_db=counter)
    d = new_discussion_id()
    comments = [manager.post(discussion_id=d, author=ALICE, text=str(n)) for n in range(30)]
    counter.reset()
    page = manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(page=3, page_size=7))
    assert counter.calls == [("comment_discussions", "find_one")]
    assert [c.id for c in page.items] == [c.id for c in comments[14:21]] and page.count == 30
    counter.reset()
    manager.page(discussion_id=d, order=THREADED, request=PageRequest(page=2, page_size=7))
    manager.count(discussion_id=d)
    # A threaded page: its keys of the rank index, then one aggregation sending only its elements.
    assert counter.calls == [("comment_discussion_ranks", "find"), ("comment_discussions", "aggregate"),
                             ("comment_discussions", "find_one")]


@pytest.mark.parametrize("threaded", [False, True])
def test_ranks_an_older_version_wrote_are_read_around_then_completed_by_the_upgrade_step(mongo_db, threaded):
    """Ranks written before they carried `sort_key` (a head whose `ranked` is true, not
    RANKS_VERSION): threaded pages are read from the document meanwhile and write nothing; the
    upgrade step (`ranks_upgrade`) writes what they lack and keeps their scores."""
    from comments.managers.ranks import RANKS_VERSION

    manager = EmbeddedCommentManager(db=mongo_db)
    d = new_discussion_id()
    root = manager.post(discussion_id=d, author=ALICE, text="root", threaded=threaded)
    posted = [root] + [manager.post(discussion_id=d, author=ALICE, text=str(n), threaded=threaded,
                                    parent=root if n % 2 else None) for n in range(6)]
    manager.add_like(discussion_id=d, comment_id=posted[3].id, username="x")
    ranks = mongo_db[manager.ranks_name]
    for c in posted:  # as an older version wrote them: the path of ids, no threaded key
        ranks.update_one({"_id": manager.rank_id(d, c.id)}, {"$set": {"path": c.path}, "$unset": {"sort_key": ""}})
    ranks.delete_one({"_id": manager.rank_id(d, posted[5].id)})  # and one never written
    manager.collection.update_one({"_id": d}, {"$set": {"ranked": True}})
    def threaded_pages():
        pages = [manager.page(discussion_id=d, order=THREADED, request=PageRequest(page=n, page_size=3))
                 for n in (1, 2, 3)]
        return [c.id for p in pages for c in p.items]

    assert threaded_pages() == [c.id for c in sorted(posted, key=lambda c: c.sort_key)]
    assert manager.collection.find_one({"_id": d})["ranked"] is True  # the reads wrote nothing
    assert manager.ranks_upgrade(discussion_id=d) is True
    assert manager.ranks_upgrade(discussion_id=d) is False  # once
    assert manager.collection.find_one({"_id": d})["ranked"] == RANKS_VERSION
    assert threaded_pages() == [c.id for c in sorted(posted, key=lambda c: c.sort_key)]
    assert ranks.count_documents({"discussion_id": d, "sort_key": {"$exists": True}}) == len(posted)
    hot = manager.page(discussion_id=d, order=HOT, request=PageRequest(page_size=1)).items
    assert [c.id for c in hot] == [posted[3].id]  # its like kept


def test_unknown_parent_is_refused(mongo_db):
    manager = EmbeddedCommentManager(db=mongo_db)
    d = new_discussion_id()
    root = manager.post(discussion_id=d, author=ALICE, text="root", threaded=True)
    other = manager.post(discussion_id=new_discussion_id(), author=ALICE, text="elsewhere", threaded=True)
    with pytest.raises(LookupError):
        manager.post(discussion_id=d, author=ALICE, text="lost", parent=other, threaded=True)
    assert manager.count(discussion_id=d) == 1 and manager.thread(discussion_id=d, comment_id=root.id, threaded=True)


def test_the_size_bound_counts_array_keys_and_likers(mongo_db):
    # `bytes` once summed standalone element sizes (no array keys) and ignored likers,
    # so a discussion the guard called full could pass 16 MiB on a like (code 17419).
    from comments.managers.layout import HARD_MAX_BYTES

    manager = EmbeddedCommentManager(db=mongo_db)
    d = new_discussion_id()
    posted = [manager.post(discussion_id=d, author=ALICE, text=f"comment {n}") for n in range(12)]
    for comment in posted[:3]:
        for n in range(25):
            manager.add_like(discussion_id=d, comment_id=comment.id, username=f"a-rather-long-liker-name-{n:04d}")
    doc = mongo_db.comment_discussions.find_one({"_id": d})
    fixed = len(bson.encode({k: v for k, v in doc.items() if k != "comments"})) + 5
    assert len(bson.encode(doc)) <= doc["bytes"] + fixed
    assert HARD_MAX_BYTES < 16 * 1024 * 1024


def test_a_like_at_the_hard_bound_is_counted_without_listing_the_name(mongo_db, monkeypatch):
    from comments.managers import embedded

    manager = EmbeddedCommentManager(db=mongo_db)
    d = new_discussion_id()
    c = manager.post(discussion_id=d, author=ALICE, text="popular")
    used = mongo_db.comment_discussions.find_one({"_id": d})["bytes"]
    monkeypatch.setattr(embedded, "HARD_MAX_BYTES", used + embedded.liker_charge("bob"))
    assert manager.add_like(discussion_id=d, comment_id=c.id, username="bob")
    assert manager.add_like(discussion_id=d, comment_id=c.id, username="carol")  # no room for the name
    stored = manager.get(discussion_id=d, comment_id=c.id)
    assert stored.likes == 2 and stored.latest_likers == ["bob"]


def test_the_settings_check_refuses_a_bound_above_16_mib(settings):
    from comments.managers.embedded import check_settings
    from comments.managers.layout import HARD_MAX_BYTES

    assert check_settings() == []
    settings.COMMENTS_EMBEDDED_MAX_BYTES = 16 * 1024 * 1024
    assert [e.id for e in check_settings()] == ["comments.E001"]
    settings.COMMENTS_EMBEDDED_MAX_BYTES = HARD_MAX_BYTES
    assert check_settings() == []


def test_the_writes_of_a_nested_discussion_read_its_tree_of_ids_not_its_comments(mongo_db, monkeypatch):
    """A reply, a status change, a pin, a like and an edit of a comment not located by `get` find
    the element's path from the ids alone (`skeleton_projection`): what they read is a few bytes
    per comment, not the discussion's texts."""
    manager = EmbeddedCommentManager(db=mongo_db)
    d = new_discussion_id()
    root = manager.post(discussion_id=d, author=ALICE, text="r" * 2000, threaded=True)
    parent = root
    for n in range(40):
        parent = manager.post(discussion_id=d, author=ALICE, text=f"{n} " + "x" * 2000, threaded=True,
                              parent=parent if n % 3 else root)
    whole = len(bson.encode(mongo_db.comment_discussions.find_one({"_id": d})))
    read = []
    collection_class = type(mongo_db.comment_discussions)
    original = collection_class.find_one

    def recording(self, *args, **kwargs):
        found = original(self, *args, **kwargs)
        if self.name == "comment_discussions" and found is not None:
            read.append(len(bson.encode(found)))
        return found

    monkeypatch.setattr(collection_class, "find_one", recording)
    target = manager.post(discussion_id=d, author=ALICE, text="a reply", threaded=True, parent=parent)
    assert manager.set_status(discussion_id=d, comment_id=target.id, status="removed", threaded=True)
    assert manager.set_pinned(discussion_id=d, comment_id=target.id, pinned=True, threaded=True)
    assert manager.add_like(discussion_id=d, comment_id=parent.id, username="carol", threaded=True)
    before_get = list(read)
    unlocated = manager.get(discussion_id=d, comment_id=parent.id, threaded=True)
    unlocated.locator = None
    read.clear()  # get() reads the comments it returns
    assert manager.edit(discussion_id=d, comment=unlocated, text="edited", html="<p>edited</p>", edited=unlocated.posted,
                        threaded=True)
    read += before_get
    assert len(read) >= 5 and max(read) * 20 < whole, (read, whole)
    monkeypatch.undo()
    stored = manager.get(discussion_id=d, comment_id=target.id, threaded=True)
    assert stored.parent == parent.id and stored.status == "removed" and stored.pinned
    assert manager.get(discussion_id=d, comment_id=parent.id, threaded=True).text == "edited"


@pytest.mark.parametrize("threaded", [False, True])
def test_a_post_killed_before_its_rank_is_ranked_when_it_is_finished(mongo_db, threaded, monkeypatch):
    """The comment is stored, then its rank (ranks.py): a kill between the two leaves it out of
    threaded and hot pages until the post is finished (`posts_unfinished`, the roll-forward of
    `integrity --repair` and of the next attempt), which writes its rank."""
    from datetime import timedelta

    from django.utils import timezone

    manager = EmbeddedCommentManager(db=mongo_db)
    d = new_discussion_id()
    root = manager.post(discussion_id=d, author=ALICE, text="root", threaded=threaded)
    manager.post_done(discussion_id=d, comment_id=root.id, threaded=threaded)

    def killed(comment):
        raise SystemExit("killed")

    monkeypatch.setattr(manager, "rank_stored", killed)
    with pytest.raises(SystemExit):
        manager.post(discussion_id=d, author=ALICE, text="reply", parent=root, threaded=threaded)
    monkeypatch.undo()
    request = PageRequest(page_size=10)
    assert [c.text for c in manager.page(discussion_id=d, order=THREADED, request=request).items] == ["root"]
    later = timezone.now() + timedelta(seconds=1)
    assert [c.text for c in manager.posts_unfinished(discussion_id=d, before=later, threaded=threaded)] == ["reply"]
    assert [c.text for c in manager.page(discussion_id=d, order=THREADED, request=request).items] == ["root", "reply"]
    assert [c.text for c in manager.page(discussion_id=d, order=HOT, request=request).items] == ["reply", "root"]


def test_a_nested_chronological_page_reads_the_posting_order_index_and_stored_pages_the_document(mongo_db):
    """Posting order of a nested discussion: its ranks by number (`discussion_seq`), then one aggregation
    sending the page's elements, each numbered by its rank (as the document numbers them when no
    two posts crossed); the page
    repairs rebuild from (`stored_page`) reads the document, so a comment whose rank a kill left
    unwritten is still there."""
    counter = CountingDB(mongo_db)
    manager = EmbeddedCommentManager(db=counter, read_db=counter)
    d = new_discussion_id()
    posted: list = []
    for n in range(30):
        parent = posted[n - 3] if n % 3 == 2 else None
        posted.append(manager.post(discussion_id=d, author=ALICE, text=str(n), parent=parent, threaded=True))
    for number in (1, 3, 5):
        request = PageRequest(page=number, page_size=7)
        counter.reset()
        page = manager.page(discussion_id=d, order=CHRONOLOGICAL, request=request, threaded=True)
        assert counter.calls == [("comment_discussion_ranks", "find"), ("comment_discussions", "aggregate")]
        stored = manager.stored_page(discussion_id=d, request=request, threaded=True)
        assert [(c.id, c.seq) for c in page.items] == [(c.id, c.seq) for c in stored.items]
        assert [c.id for c in page.items] == [c.id for c in posted[(number - 1) * 7:number * 7]]
        assert page.count == stored.count == 30
    following = manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(page_size=7), threaded=True,
                             cursor=page.extra["previous"])
    assert [c.id for c in following.items] == [c.id for c in posted[21:28]]
    mongo_db[manager.ranks_name].delete_one({"_id": manager.rank_id(d, posted[1].id)})
    first = PageRequest(page=1, page_size=7)
    assert posted[1].id not in [c.id for c in manager.page(discussion_id=d, order=CHRONOLOGICAL, request=first,
                                                            threaded=True).items]
    assert [c.id for c in manager.stored_page(discussion_id=d, request=first, threaded=True).items] == \
        [c.id for c in posted[:7]]


def test_a_nested_post_killed_before_its_rank_renumbers_the_ranks_each_number_once(mongo_db, monkeypatch):
    """Two posts racing: A takes number 2 but a later time than B, which takes number 3, and A is
    killed before its rank. The document does not keep A's number, and a number no rank holds
    may be a post's in flight: finishing A numbers the discussion's ranks anew from the document
    (posting time), so each number is held once and the anchors are built again. A pending
    post whose rank was written keeps it as it is."""
    from datetime import timedelta

    from django.utils import timezone

    from comments.managers import fields

    manager = EmbeddedCommentManager(db=mongo_db)
    d = new_discussion_id()
    root = manager.post(discussion_id=d, author=ALICE, text="root", threaded=True)
    manager.post_done(discussion_id=d, comment_id=root.id, threaded=True)
    late = timezone.now() + timedelta(seconds=5)

    def killed(comment):
        raise SystemExit("killed")

    monkeypatch.setattr(fields, "monotonic_now", lambda: late)  # A's clock read later than B's
    monkeypatch.setattr(manager, "rank_stored", killed)
    with pytest.raises(SystemExit):
        manager.post(discussion_id=d, author=ALICE, text="A", threaded=True)
    monkeypatch.undo()
    b = manager.post(discussion_id=d, author=ALICE, text="B", threaded=True)  # ranked, still pending
    assert b.seq == 3
    finished = manager.posts_unfinished(discussion_id=d, before=late + timedelta(seconds=1), threaded=True)
    assert sorted(c.text for c in finished) == ["A", "B"]
    page = manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(page_size=10), threaded=True)
    assert [(c.text, c.seq) for c in page.items] == [("root", 1), ("B", 2), ("A", 3)]
    second = manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(page=2, page_size=2), threaded=True)
    assert [c.text for c in second.items] == ["A"]
    ranks = mongo_db[manager.ranks_name]
    assert sorted(r["seq"] for r in ranks.find({"discussion_id": d})) == [1, 2, 3]
    assert manager.anchors_behind(discussion_id=d) == 0


@pytest.mark.parametrize("threaded", [False, True])
def test_finishing_a_pending_post_that_has_its_rank_changes_no_number(mongo_db, threaded):
    """Killed after its rank, before `post_done`: finishing it writes no rank (a number that may
    be a post's in flight is not handed out)."""
    manager = EmbeddedCommentManager(db=mongo_db)
    d = new_discussion_id()
    posted = [manager.post(discussion_id=d, author=ALICE, text=str(n), threaded=threaded) for n in range(4)]
    for c in posted[:3]:
        manager.post_done(discussion_id=d, comment_id=c.id, threaded=threaded)
    ranks = mongo_db[manager.ranks_name]
    before = {r["_id"]: r["seq"] for r in ranks.find({"discussion_id": d})}
    ranks.delete_one({"_id": manager.rank_id(d, posted[2].id)})  # a number no rank holds (as a post in flight)
    from datetime import timedelta

    from django.utils import timezone

    finished = manager.posts_unfinished(discussion_id=d, before=timezone.now() + timedelta(seconds=1), threaded=threaded)
    assert [c.id for c in finished] == [posted[3].id]
    after = {r["_id"]: r["seq"] for r in ranks.find({"discussion_id": d})}
    assert after == {k: v for k, v in before.items() if k != manager.rank_id(d, posted[2].id)}


@pytest.mark.parametrize("threaded", [False, True])
def test_a_renumbering_killed_part_way_is_done_again_by_the_upgrade_step(mongo_db, threaded, monkeypatch):
    """`ranks_repair` numbers a ranked discussion's ranks anew in several writes; killed after the
    first of them, the discussion is marked unranked, so its pages read the document meanwhile
    (every comment there), the upgrade step writes them all again and its numbers are 1..N once
    more, and no anchors stand for the half-written ones."""
    from comments.managers.ranks import HotRanks

    manager = EmbeddedCommentManager(db=mongo_db)
    d = new_discussion_id()
    posted = [manager.post(discussion_id=d, author=ALICE, text=str(n), threaded=threaded) for n in range(6)]
    original = HotRanks.ranks_backfilled

    def half_then_killed(self, discussion_id, comments):
        original(self, discussion_id, comments[:3])
        raise SystemExit("killed")

    monkeypatch.setattr(HotRanks, "ranks_backfilled", half_then_killed)
    with pytest.raises(SystemExit):
        manager.ranks_repair(discussion_id=d)
    monkeypatch.undo()
    assert not manager._ranks_complete(d)
    assert manager.anchors_refresh(discussion_id=d) is False  # nothing built on half-written ranks
    page = manager.page(discussion_id=d, order=THREADED, request=PageRequest(page_size=10), threaded=threaded)
    assert sorted(c.id for c in page.items) == sorted(c.id for c in posted)
    assert not manager._ranks_complete(d)  # a read writes no rank
    assert manager.ranks_upgrade(discussion_id=d) is True
    assert manager._ranks_complete(d)
    assert sorted(r["seq"] for r in mongo_db[manager.ranks_name].find({"discussion_id": d})) == list(range(1, 7))
