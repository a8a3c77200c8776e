"""MongoDB's own shell against `python -m docstore serve`: mongosh (installed from the npm registry by
`make mongosh` into tools/mongosh) connects, lists collections, finds and updates documents, and shows
the errors a server's replies give it for a duplicate key and an unknown operator.

mongosh is a Node.js program: without Node.js these tests skip. Where Node.js is present but mongosh
is not installed they skip too, except under REQUIRE_REAL_SERVICES=1 (CI, .ci/run runs `make
mongosh`), where they fail."""

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from docstore.server.commands import Engine
from docstore.server.tcp import Server

ROOT = Path(__file__).resolve().parents[2]
MONGOSH = ROOT / "tools" / "mongosh" / "node_modules" / ".bin" / "mongosh"


# Each test opens a store of its own: no project database, no cache clearing (tests/conftest.py).
pytestmark = pytest.mark.own_store


def _mongosh() -> str:
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed: mongosh cannot run")
    if MONGOSH.exists():
        return str(MONGOSH)
    found = shutil.which("mongosh")
    if found:
        return found
    message = "mongosh is not installed (make mongosh installs it into tools/mongosh)"
    if os.environ.get("REQUIRE_REAL_SERVICES") == "1":
        pytest.fail(f"REQUIRE_REAL_SERVICES=1 but {message}", pytrace=False)
    pytest.skip(message)


@pytest.fixture
def shell(tmp_path):
    program = _mongosh()
    engine = Engine(str(tmp_path / "served.sqlite3"), db="cms")
    server = Server(engine, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    uri = server.uri.replace("/?", "/shop?", 1)  # mongodb://127.0.0.1:PORT/shop?replicaSet=docstore
    assert "/shop?" in uri

    def run(script: str) -> list:
        """Runs `script` in mongosh; each `out(value)` in it prints one JSON line, returned in order."""
        prelude = "const out = (v) => print(EJSON.stringify(v, {relaxed: true}));\n"
        done = subprocess.run(
            [program, "--quiet", "--norc", uri, "--eval", prelude + script],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "MONGOSH_NO_UPDATE_CHECK": "1", "DO_NOT_TRACK": "1", "HOME": str(tmp_path)},
        )
        assert done.returncode == 0, done.stderr + done.stdout
        return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]

    yield run
    server.shutdown()
    server.server_close()
    engine.client.close()


def test_mongosh_connects_lists_finds_and_updates(shell):
    hello, names, found, updated, after, count = shell("""
        const h = db.hello();
        out({isWritablePrimary: h.isWritablePrimary, setName: h.setName});
        db.items.insertMany([{_id: 1, name: "tea", qty: 5}, {_id: 2, name: "cocoa", qty: 0}]);
        db.createCollection("orders");
        out(db.getCollectionNames().sort());
        out(db.items.find({qty: {$gt: 0}}, {_id: 0, name: 1}).toArray());
        const r = db.items.updateOne({_id: 2}, {$inc: {qty: 3}, $set: {restocked: true}});
        out({matched: r.matchedCount, modified: r.modifiedCount, acknowledged: r.acknowledged});
        out(db.items.findOne({_id: 2}));
        out(db.items.countDocuments({qty: {$gte: 3}}));
    """)
    assert hello == {"isWritablePrimary": True, "setName": "docstore"}
    assert names == ["items", "orders"]
    assert found == [{"name": "tea"}]
    assert updated == {"matched": 1, "modified": 1, "acknowledged": True}
    assert after == {"_id": 2, "name": "cocoa", "qty": 3, "restocked": True}
    assert count == 2


def test_mongosh_shows_a_servers_duplicate_key_error(shell):
    (error, string_key) = shell("""
        db.items.insertOne({_id: 1});
        db.items.createIndex({sku: 1}, {unique: true});
        db.items.insertOne({_id: 2, sku: "A-1"});
        const seen = [];
        for (const doc of [{_id: 1}, {_id: 3, sku: "A-1"}]) {
          try { db.items.insertOne(doc); seen.push(null); }
          catch (e) { seen.push({name: e.name, code: e.code, codeName: e.codeName ?? null, message: e.message,
                                 keyPattern: e.keyPattern, keyValue: e.keyValue}); }
        }
        out(seen[0]); out(seen[1]);
    """)
    # What mongosh shows for a server's write error: the writeErrors entry's errmsg, code 11000,
    # keyPattern and keyValue (a write error carries no codeName).
    assert error == {
        "name": "MongoServerError", "code": 11000, "codeName": None,
        "message": "E11000 duplicate key error collection: shop.items index: _id_ dup key: { _id: 1 }",
        "keyPattern": {"_id": 1}, "keyValue": {"_id": 1},
    }
    assert string_key["message"] == (
        'E11000 duplicate key error collection: shop.items index: sku_1 dup key: { sku: "A-1" }')
    assert string_key["keyPattern"] == {"sku": 1} and string_key["keyValue"] == {"sku": "A-1"}


def test_mongosh_shows_a_servers_unknown_operator_errors(shell):
    query, update, stage = shell("""
        db.items.insertOne({_id: 1, x: 1});
        const seen = [];
        const attempts = [
          () => db.items.find({x: {$foo: 1}}).toArray(),
          () => db.items.updateOne({_id: 1}, {$bogus: {x: 2}}),
          () => db.items.aggregate([{$frobnicate: {}}]).toArray(),
        ];
        for (const attempt of attempts) {
          try { attempt(); seen.push(null); }
          catch (e) { seen.push({name: e.name, code: e.code, codeName: e.codeName ?? null, message: e.message}); }
        }
        seen.forEach(out);
    """)
    assert query == {"name": "MongoServerError", "code": 2, "codeName": "BadValue",
                     "message": "unknown operator: $foo"}
    assert update == {"name": "MongoServerError", "code": 9, "codeName": None,
                      "message": "Unknown modifier: $bogus. Expected a valid update modifier or pipeline-style "
                                 "update specified as an array"}
    assert stage == {"name": "MongoServerError", "code": 40324, "codeName": "Location40324",
                     "message": "Unrecognized pipeline stage name: '$frobnicate'"}
