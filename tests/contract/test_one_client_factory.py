"""One place opens the site's MongoDB clients: `core/mongo.py` (get_db(), get_client()), so that
the URI, the read preference, the write concern, the time-outs and the command listeners are set
once. The embedded engine's own simulated cluster, whose router talks to its shards as mongos
talks to its shards' `mongod`s, opens no driver client: its one place for shard connections is
`docstore/cluster/links.py` (shard_client, a pool of wire-protocol sockets). Any other module of
the project that names pymongo's client class (a call, an import, an attribute
`pymongo.MongoClient`) fails here.

Read from the source with `ast`, so a word in a docstring or a comment is not a client. The test
suite itself (tests/) opens clients of its own to the servers it starts and is not counted."""

import ast
import os
from pathlib import Path

from tests.contract.test_import_graph import ROOT

CLIENT_CLASSES = {"MongoClient", "AsyncMongoClient"}
ALLOWED = {
    "core/mongo.py",  # the site's connection: the one client factory of the project
}
SKIPPED_DIRS = {"tests", "node_modules", "__pycache__"}


def project_modules():
    """Every Python file of the project but the test suite, hidden folders (.venv, .git) skipped."""
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        for name in sorted(files):
            if name.endswith(".py"):
                yield Path(folder) / name


def client_uses(source: str) -> list[int]:
    """The lines of a module that name a MongoDB client class: `from pymongo import MongoClient`
    (under any alias), `MongoClient(...)`, `pymongo.MongoClient`, `mongo_client.MongoClient`."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and any(alias.name in CLIENT_CLASSES for alias in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr in CLIENT_CLASSES:
            lines.append(node.lineno)
        elif isinstance(node, ast.Name) and node.id in CLIENT_CLASSES:
            lines.append(node.lineno)
    return sorted(set(lines))


def stray_clients() -> list[str]:
    found = []
    for path in project_modules():
        rel = path.relative_to(ROOT).as_posix()
        if rel not in ALLOWED:
            found += [f"{rel}:{line}" for line in client_uses(path.read_text(encoding="utf-8"))]
    return found


def test_the_check_finds_a_client_however_it_is_named():
    source = '''
"""A docstring that says MongoClient( is no client."""
import pymongo
from pymongo import MongoClient as Opened
from pymongo.mongo_client import MongoClient

# a comment naming MongoClient( neither
a = pymongo.MongoClient("mongodb://x/")
b = Opened("mongodb://y/")
c = MongoClient("mongodb://z/")
d = pymongo.AsyncMongoClient("mongodb://w/")
'''
    assert client_uses(source) == [4, 5, 8, 10, 11]
    assert client_uses("from core.mongo import get_db\ndb = get_db()\n") == []


def test_the_allowed_places_are_where_the_clients_are_made():
    """The exceptions are real: each allowed module opens a client (a stale entry would let a new
    module of that name open one unseen)."""
    for rel in ALLOWED:
        assert client_uses((ROOT / rel).read_text(encoding="utf-8")), rel


def test_no_module_but_the_two_factories_opens_a_mongodb_client():
    found = stray_clients()
    assert found == [], ("open MongoDB clients through core.mongo (the site) or docstore.cluster.links "
                         "(the simulated cluster's shards): " + ", ".join(found))
