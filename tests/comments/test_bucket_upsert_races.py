"""Two writers opening one bucket at once (fault injection): the second upsert fails with a
duplicate `_id`, as a server's does when the other's insert lands between its match and its
insert (an upsert whose filter is more than equalities on one unique index's fields is not
retried by the server). An import's batch (`append_many`, what `comments_import` stores with),
an appended comment and the integrity repair's `fill_gap` each still land, as a post does."""

import pytest
from pymongo.errors import BulkWriteError, DuplicateKeyError

from comments.managers.base import Author
from comments.managers.bucketed import BucketedCommentManager
from comments.managers.fields import new_comment
from core.paging import PageRequest
from tests.contract.conftest import new_discussion_id

pytestmark = pytest.mark.django_db

ANA = Author(id=1, name="ana")


class OpenedFirst:
    """A bucket collection whose first upsert (`update_one` or `bulk_write`) lets `competitor`
    run first and then fails as the server fails the loser of the race: E11000 on the write
    whose bucket the competitor inserted, nothing of it applied (an ordered bulk write applies
    the writes before it and stops there)."""

    def __init__(self, collection, competitor, bucket_id):
        self._collection, self._competitor, self._bucket_id, self.raced = collection, competitor, bucket_id, False

    def __getattr__(self, name):
        real = getattr(self._collection, name)
        if name == "update_one":
            def update_one(key, update, upsert=False, **kwargs):
                if upsert and not self.raced and key.get("_id") == self._bucket_id:
                    self.raced = True
                    self._competitor()
                    raise DuplicateKeyError("E11000 duplicate key error (forced interleaving)", 11000)
                return real(key, update, upsert=upsert, **kwargs)

            return update_one
        if name == "bulk_write":
            def bulk_write(requests, ordered=True, **kwargs):
                ids = [request._filter.get("_id") for request in requests]
                if self.raced or self._bucket_id not in ids:
                    return real(requests, ordered=ordered, **kwargs)
                self.raced = True
                at = ids.index(self._bucket_id)
                if at:
                    real(requests[:at], ordered=ordered, **kwargs)
                self._competitor()
                raise BulkWriteError({"writeErrors": [{"index": at, "code": 11000, "errmsg": "E11000 (forced)"}],
                                      "writeConcernErrors": [], "nInserted": 0, "nUpserted": at, "nMatched": 0,
                                      "nModified": 0, "nRemoved": 0, "upserted": []})

            return bulk_write
        return real


def _racing(monkeypatch, manager, discussion_id, bucket, competitor):
    """Every BucketedCommentManager's buckets go through an OpenedFirst; the competitor writes
    through the real collection."""
    real = BucketedCommentManager.buckets.fget
    wrapped = OpenedFirst(real(manager), lambda: _as_itself(monkeypatch, real, wrapped, competitor),
                          manager.bucket_id(discussion_id, bucket))
    monkeypatch.setattr(BucketedCommentManager, "buckets", property(lambda self: wrapped))
    return wrapped


def _as_itself(monkeypatch, real, wrapped, competitor):
    monkeypatch.setattr(BucketedCommentManager, "buckets", property(real))
    competitor()
    monkeypatch.setattr(BucketedCommentManager, "buckets", property(lambda self: wrapped))


def _texts(manager, discussion_id):
    page = manager.stored_page(discussion_id=discussion_id, request=PageRequest(page=1, page_size=50))
    return [(c.seq, c.text) for c in page.items]


def _imported(discussion_id, texts):
    return [new_comment(discussion_id=discussion_id, comment_id=f"imp{n:09d}", author=ANA, text=text, parent=None)
            for n, text in enumerate(texts)]


@pytest.mark.parametrize("many", [False, True], ids=["append", "append_many"])
def test_an_import_racing_a_post_that_opens_its_bucket_stores_every_comment(settings, monkeypatch, many):
    settings.COMMENTS_BUCKET_SIZE = 2
    manager, d = BucketedCommentManager(), new_discussion_id()
    for text in ("one", "two"):
        manager.post(discussion_id=d, author=ANA, text=text)
    batch = _imported(d, ["three (imported)"] if not many else ["three (imported)", "four (imported)",
                                                                 "five (imported)"])
    # The import takes 3 (and 4, 5); the post takes the next number, in the last bucket the import writes.
    last_bucket = (2 + len(batch)) // 2 + 1
    wrapped = _racing(monkeypatch, manager, d, last_bucket,
                      lambda: manager.post(discussion_id=d, author=ANA, text="posted meanwhile"))
    if many:
        assert manager.append_many(batch) == len(batch)
    else:
        manager.append(batch[0])
    monkeypatch.undo()
    assert wrapped.raced
    expected = ["one", "two", *(c.text for c in batch), "posted meanwhile"]
    assert _texts(manager, d) == list(enumerate(expected, start=1))


def test_a_gap_filled_while_a_post_opens_its_bucket_is_filled(settings, monkeypatch):
    """The repair puts a tombstone in number 3 (its writer died) while the post of number 4
    opens bucket 2: the repair's upsert loses the race, and still stores the tombstone."""
    from django.utils import timezone

    settings.COMMENTS_BUCKET_SIZE = 2
    manager, d = BucketedCommentManager(), new_discussion_id()
    for text in ("one", "two"):
        manager.post(discussion_id=d, author=ANA, text=text)
    manager.next_seq(d, ["died"])  # number 3 taken by a writer that died before storing its comment
    wrapped = _racing(monkeypatch, manager, d, 2, lambda: manager.post(discussion_id=d, author=ANA, text="four"))
    assert manager.fill_gap(discussion_id=d, seq=3, posted=timezone.now()) is True
    monkeypatch.undo()
    assert wrapped.raced
    assert [(seq, text) for seq, text in _texts(manager, d)] == [(1, "one"), (2, "two"), (3, ""), (4, "four")]
    # The number holds its comment now: filling it again stores nothing.
    assert manager.fill_gap(discussion_id=d, seq=3, posted=timezone.now()) is False
