"""Fixtures of the comment-manager contract suite: one manager per strategy, and a
round-trip counter (a test-only wrapper around the database handle)."""

import itertools

import pytest

from comments.managers import STRATEGIES, manager_for
from comments.managers.base import Author

_discussions = itertools.count(10_000)


def new_discussion_id() -> int:
    """A discussion id no other test or hypothesis example of this process uses."""
    return next(_discussions)


@pytest.fixture(params=sorted(STRATEGIES))
def storage(request):
    return request.param


@pytest.fixture
def manager(storage, mongo_db):
    return manager_for(storage, db=mongo_db)


@pytest.fixture
def author():
    return Author(id=7, name="alice")


class CountingCollection:
    """Forwards to a pymongo collection, counting each call that talks to the server."""

    OPERATIONS = {"find", "find_one", "aggregate", "count_documents", "estimated_document_count", "distinct",
                  "insert_one", "insert_many", "update_one", "update_many", "replace_one", "delete_one", "delete_many",
                  "find_one_and_update", "find_one_and_replace", "find_one_and_delete", "bulk_write"}

    def __init__(self, collection, log):
        self._collection = collection
        self._log = log

    def __getattr__(self, name):
        attr = getattr(self._collection, name)
        if name in self.OPERATIONS:
            def counted(*args, **kwargs):
                self._log.append((self._collection.name, name))
                return attr(*args, **kwargs)
            return counted
        return attr


class CountingDB:
    def __init__(self, db):
        self._db = db
        self.calls: list[tuple[str, str]] = []

    def __getitem__(self, name):
        return CountingCollection(self._db[name], self.calls)

    def __getattr__(self, name):
        return CountingCollection(getattr(self._db, name), self.calls)

    def reset(self):
        self.calls.clear()


@pytest.fixture
def counting_manager(storage, mongo_db):
    """(manager, counter): the manager of `storage` whose every MongoDB call is logged in counter.calls."""
    counter = CountingDB(mongo_db)
    return manager_for(storage, db=counter, read_db=counter), counter
