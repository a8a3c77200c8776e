"""A runner for MongoDB's driver specification tests in the unified test format.

The oracle is not ours: `source/crud/tests/unified/` and `source/index-management/tests/` of
MongoDB's `specifications` repository (a copy in `../shared/mongodb-specs/`, read in place, never
copied into the project), the files every MongoDB driver runs against a real server. This module
reads them and runs each test against a client: the embedded engine (`docstore.Client` on a
temporary file) in `test_spec_conformance.py`, and mongomock as a control in the report
(`python -m tests.docstore.spec_runner --write docs/conformance.md`).

It follows the format's rules (source/unified-test-format/unified-test-format.md):
`runOnRequirements` against the version the client reports (buildInfo) and a standalone
topology; `initialData` (drop, create, insert); each operation's `expectResult` under the
format's matching rules ("Evaluating Matches": root-level documents may have extra fields,
flexible numerics, `$$exists`, `$$type`, `$$unsetOrMatches`, `$$matchesEntity`, `$$lte`,
`$$matchAsDocument`, `$$matchAsRoot`); `expectError` (`isError`, `isClientError`,
`errorContains`, `errorCode`, `errorCodeName`, `errorLabelsContain`, `errorLabelsOmit`,
`errorResponse`, `expectResult`, `writeErrors`); and `outcome` (exact documents, key order free).

Out of scope, each skipped with its reason: sessions and transactions, fail points, tests whose
only assertions are command events (`expectEvents`), the removed `count`, and the files pymongo's
own suite removes as not implemented by pymongo (rawData).
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp, json_util
from bson.json_util import JSONMode, JSONOptions

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT.parent / "shared" / "mongodb-specs" / "source"
FOLDERS = ("crud/tests/unified", "index-management/tests")

# The unified format's own schema versions this runner implements (its "Schema Version" rules: a
# runner MUST skip a file whose major version differs or whose minor version it does not support).
SCHEMA_VERSION = (1, 21)
TOPOLOGY = "single"  # one server, no replica set: what the engine (and mongomock) are

# Each operation gets this many seconds (a runner cannot wait forever for a database that never
# answers); past it the operation fails with "never returns".
OPERATION_TIMEOUT = 5.0

_JSON = JSONOptions(json_mode=JSONMode.RELAXED, document_class=dict, tz_aware=True, tzinfo=_dt.UTC)

# Spec tests the embedded engine fails today, with the cause. A strict xfail each: fixing the
# engine turns the test into an XPASS, which fails the run until its row leaves this table.
# $listLocalSessions lists the sessions the server holds; a driver always has one (its implicit
# session), the embedded engine has none, and refuses the stage rather than answer nothing.
DB_AGGREGATE = '$listLocalSessions refused (238): the engine has no sessions'

EXPECTED_FAILURES: dict[str, str] = {
    'db-aggregate.json::Aggregate with $listLocalSessions': DB_AGGREGATE,
    'db-aggregate.json::Aggregate with $listLocalSessions and allowDiskUse': DB_AGGREGATE,
}


# --- the cases ------------------------------------------------------------------------------------


@dataclass
class Case:
    id: str
    file: str
    spec: dict
    test: dict
    skip: str | None


def spec_files() -> list[Path]:
    out = []
    for folder in FOLDERS:
        out.extend(sorted((SPECS / folder).glob("*.json")))
    return out


def _version(text: str) -> tuple[int, int, int]:
    parts = [int(p) for p in re.findall(r"\d+", str(text))[:3]]
    return tuple(parts + [0] * (3 - len(parts)))  # type: ignore[return-value]


def _requirement_met(req: dict, version: tuple, topology: str = TOPOLOGY) -> str | None:
    """None when the requirement holds for a server of `version` in `topology`, else why not."""
    if "minServerVersion" in req and version < _version(req["minServerVersion"]):
        return f"needs server {req['minServerVersion']}+"
    if "maxServerVersion" in req:
        top = _version(req["maxServerVersion"])
        if version > top:
            return f"needs server <= {req['maxServerVersion']}"
    if "topologies" in req and topology not in req["topologies"]:
        return f"needs a {'/'.join(req['topologies'])} topology"
    if req.get("serverless") == "require":
        return "needs serverless"
    if req.get("auth") is True:
        return "needs authentication"
    if req.get("csfle"):
        return "needs client-side encryption"
    if req.get("serverParameters"):
        return "needs server parameters"
    return None


def _requirements(reqs: list | None, version: tuple, topology: str = TOPOLOGY) -> str | None:
    if not reqs:
        return None
    reasons = [_requirement_met(r, version, topology) for r in reqs]
    return None if any(r is None for r in reasons) else "runOnRequirements: " + reasons[0]


def scope(spec: dict, test: dict, version: tuple, topology: str = TOPOLOGY) -> str | None:
    """Why a test is out of scope (the reason it is skipped with), or None to run it; `topology`:
    the one the engine declares (over the wire `docstore serve` is a replica set of one member)."""
    major, minor = (int(p) for p in spec["schemaVersion"].split(".")[:2])
    if major != SCHEMA_VERSION[0] or minor > SCHEMA_VERSION[1]:
        return f"schema version {spec['schemaVersion']} not supported"
    if test.get("skipReason"):
        return f"skipped by the spec: {test['skipReason']}"
    reason = _requirements(spec.get("runOnRequirements"), version, topology) or \
        _requirements(test.get("runOnRequirements"), version, topology)
    if reason:
        return reason
    ops = test["operations"]
    names = {op["name"] for op in ops}
    if names & {"failPoint", "targetedFailPoint"}:
        return "fail points (a server test hook)"
    if any("session" in e for e in spec.get("createEntities", [])) or \
            any("session" in (op.get("arguments") or {}) for op in ops) or \
            names & {"startTransaction", "commitTransaction", "abortTransaction", "withTransaction"}:
        return "sessions and transactions"
    if "count" in names:
        return "count (removed from the drivers' CRUD API)"
    if names & {"createSearchIndex", "createSearchIndexes", "dropSearchIndex", "listSearchIndexes",
                "updateSearchIndex"}:
        return "Atlas Search indexes"
    if not test.get("outcome") and not any("expectResult" in op or "expectError" in op for op in ops):
        return "asserts only command events (expectEvents)"
    return None


# Files the driver itself does not run, because pymongo (the version requirements.txt pins, the API
# the engine imitates) does not implement what they test: its own copy of the suite removes them
# (mongo-python-driver, .evergreen/remove-unimplemented-tests.sh). rawData (MongoDB 8.2, DRIVERS-3064):
# pymongo has no raw_data argument, so its find, insert, update, replace, delete, bulk_write and
# list_indexes raise TypeError for it and its other methods send it to the server as an unknown
# field (40415 below 8.2), never "ignore the argument" as these files' below-8.2 tests expect.
DRIVER_UNIMPLEMENTED = "rawData (MongoDB 8.2): not implemented by pymongo, whose suite removes the file"


def _driver_scope(file_name: str) -> str | None:
    return DRIVER_UNIMPLEMENTED if file_name.endswith("-rawdata.json") else None


@functools.lru_cache(maxsize=4)
def cases(version: tuple, topology: str = TOPOLOGY) -> list[Case]:
    out = []
    for path in spec_files():
        spec = json_util.loads(path.read_text(), json_options=_JSON)
        for test in spec["tests"]:
            case_id = f"{path.name}::{test['description']}"
            out.append(Case(case_id, path.name, spec, test, _driver_scope(path.name) or scope(spec, test, version, topology)))
    return out


# --- matching (unified format, "Evaluating Matches") ----------------------------------------------


class Mismatch(AssertionError):
    pass


def _is_number(v) -> bool:
    return isinstance(v, int | float | Int64) and not isinstance(v, bool)


_TYPES = {
    "double": lambda v: isinstance(v, float),
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, Mapping),
    "array": lambda v: isinstance(v, list | tuple),
    "binData": lambda v: isinstance(v, bytes | Binary),
    "objectId": lambda v: isinstance(v, ObjectId),
    "bool": lambda v: isinstance(v, bool),
    "date": lambda v: isinstance(v, _dt.datetime),
    "null": lambda v: v is None,
    "regex": lambda v: isinstance(v, Regex | re.Pattern),
    "javascript": lambda v: isinstance(v, Code),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool | Int64) and -2**31 <= v < 2**31,
    "long": lambda v: isinstance(v, Int64) or (isinstance(v, int) and not isinstance(v, bool)),
    "timestamp": lambda v: isinstance(v, Timestamp),
    "decimal": lambda v: isinstance(v, Decimal128),
    "minKey": lambda v: isinstance(v, MinKey),
    "maxKey": lambda v: isinstance(v, MaxKey),
}


def _special(expected) -> str | None:
    if isinstance(expected, Mapping) and len(expected) == 1:
        key = next(iter(expected))
        if isinstance(key, str) and key.startswith("$$"):
            return key
    return None


def _same_scalar(expected, actual) -> bool:
    if _is_number(expected) and _is_number(actual):
        return float(expected) == float(actual) if isinstance(expected, float) or isinstance(actual, float) \
            else int(expected) == int(actual)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, _dt.datetime) and isinstance(actual, _dt.datetime):
        e = expected if expected.tzinfo else expected.replace(tzinfo=_dt.UTC)
        a = actual if actual.tzinfo else actual.replace(tzinfo=_dt.UTC)
        return e == a
    if type(expected) is not type(actual) and not (isinstance(expected, str) and isinstance(actual, str)):
        if isinstance(expected, bytes | Binary) and isinstance(actual, bytes | Binary):
            return bytes(expected) == bytes(actual)
        return False
    return expected == actual


def match(expected, actual, *, root: bool, entities: dict | None = None, path: str = "$") -> None:
    """Raise Mismatch unless `actual` matches `expected` by the format's rules."""
    entities = entities or {}
    op = _special(expected)
    if op is not None:
        _operator(op, expected[op], actual, entities, path, present=True)
        return
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            raise Mismatch(f"{path}: expected a document, got {actual!r}")
        for key, value in expected.items():
            op = _special(value)
            if op in ("$$exists", "$$unsetOrMatches"):
                if op == "$$exists":
                    if bool(value[op]) != (key in actual):
                        raise Mismatch(f"{path}.{key}: expected it {'present' if value[op] else 'absent'}")
                    continue
                if key not in actual:
                    continue
                match(value[op], actual[key], root=False, entities=entities, path=f"{path}.{key}")
                continue
            if key not in actual:
                raise Mismatch(f"{path}.{key}: missing (actual {dict(actual)!r})")
            match(value, actual[key], root=False, entities=entities, path=f"{path}.{key}")
        if not root:
            extra = set(actual) - set(expected)
            if extra:
                raise Mismatch(f"{path}: unexpected fields {sorted(map(str, extra))} in {dict(actual)!r}")
        return
    if isinstance(expected, list):
        if not isinstance(actual, list | tuple):
            raise Mismatch(f"{path}: expected an array, got {actual!r}")
        if len(expected) != len(actual):
            raise Mismatch(f"{path}: expected {len(expected)} elements, got {len(actual)}: {list(actual)!r}")
        for n, (e, a) in enumerate(zip(expected, actual, strict=True)):
            match(e, a, root=False, entities=entities, path=f"{path}[{n}]")
        return
    if not _same_scalar(expected, actual):
        raise Mismatch(f"{path}: expected {expected!r}, got {actual!r}")


def _operator(op: str, arg, actual, entities, path, present: bool) -> None:
    if op == "$$type":
        kinds = arg if isinstance(arg, list) else [arg]
        if not any(_TYPES[k](actual) for k in kinds):
            raise Mismatch(f"{path}: {actual!r} is not of type {kinds}")
    elif op == "$$unsetOrMatches":
        if actual is not None:
            match(arg, actual, root=False, entities=entities, path=path)
    elif op == "$$exists":
        raise Mismatch(f"{path}: $$exists outside a document")
    elif op == "$$matchesEntity":
        match(entities[arg], actual, root=False, entities=entities, path=path)
    elif op == "$$matchesHexBytes":
        if not isinstance(actual, bytes | Binary) or bytes(actual).hex() != arg.lower():
            raise Mismatch(f"{path}: {actual!r} is not the bytes {arg}")
    elif op == "$$lte":
        if not (_is_number(actual) and actual <= arg):
            raise Mismatch(f"{path}: {actual!r} > {arg!r}")
    elif op == "$$matchAsDocument":
        if not isinstance(actual, str):
            raise Mismatch(f"{path}: {actual!r} is not a JSON string")
        match(arg, json_util.loads(actual, json_options=_JSON), root=False, entities=entities, path=path)
    elif op == "$$matchAsRoot":
        match(arg, actual, root=True, entities=entities, path=path)
    else:
        raise Mismatch(f"{path}: unsupported special operator {op}")


def exact(expected, actual, path="$") -> None:
    """Outcome data: documents equal (key order free, numerics by value), no special operators."""
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping) or set(expected) != set(actual):
            raise Mismatch(f"{path}: expected {dict(expected)!r}, got {actual!r}")
        for k in expected:
            exact(expected[k], actual[k], f"{path}.{k}")
    elif isinstance(expected, list):
        if not isinstance(actual, list) or len(expected) != len(actual):
            raise Mismatch(f"{path}: expected {expected!r}, got {actual!r}")
        for n, (e, a) in enumerate(zip(expected, actual, strict=True)):
            exact(e, a, f"{path}[{n}]")
    elif not _same_scalar(expected, actual):
        raise Mismatch(f"{path}: expected {expected!r}, got {actual!r}")


# --- running --------------------------------------------------------------------------------------


class NeverReturns(Exception):
    """An operation that did not return within OPERATION_TIMEOUT."""


class _Deadline:
    """SIGALRM after `seconds` (in the main thread only) raises NeverReturns in the operation."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.armed = threading.current_thread() is threading.main_thread()

    def _fire(self, *_):
        raise NeverReturns(f"the operation did not return within {self.seconds:g} s")

    def __enter__(self):
        if self.armed:
            self.previous = signal.signal(signal.SIGALRM, self._fire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
        return False


def _snake(name: str) -> str:
    special = {"maxTimeMS": "max_time_ms", "fieldName": "key", "returnDocument": "return_document"}
    if name in special:
        return special[name]
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _command_kwargs(args: dict) -> dict:
    """Options of aggregate, countDocuments, estimatedDocumentCount and distinct: pymongo takes them
    under the command's own (camelCase) names (`batchSize`, `maxTimeMS`, `allowDiskUse`) and sends
    them in the command as given; a snake_case name would reach the server as an unknown field."""
    return dict(args)


def _kwargs(args: dict, drop=(), keep=()) -> dict:
    """pymongo's parameter names; `keep`: the options a method has no parameter for, which pymongo
    sends in the command as given (find_one_and_*'s `bypassDocumentValidation`, `maxTimeMS`)."""
    from pymongo import ReturnDocument

    out = {}
    for key, value in args.items():
        if key in drop:
            continue
        if key == "returnDocument":
            value = ReturnDocument.AFTER if value == "After" else ReturnDocument.BEFORE
        out[key if key in keep else _snake(key)] = value
    return out


_FIND_AND_MODIFY_FIELDS = ("bypassDocumentValidation", "maxTimeMS", "writeConcern")


def _write_model(request: dict):
    from pymongo import DeleteMany, DeleteOne, InsertOne, ReplaceOne, UpdateMany, UpdateOne

    (kind, args), = request.items()
    classes = {"insertOne": InsertOne, "updateOne": UpdateOne, "updateMany": UpdateMany, "replaceOne": ReplaceOne,
               "deleteOne": DeleteOne, "deleteMany": DeleteMany}
    cls = classes[kind]
    if kind == "insertOne":
        return cls(args["document"])
    kw = _kwargs(args, drop=("filter", "update", "replacement"))
    if kind in ("updateOne", "updateMany"):
        return cls(args["filter"], args["update"], **kw)
    if kind == "replaceOne":
        return cls(args["filter"], args["replacement"], **kw)
    return cls(args["filter"], **kw)


def _client_write_model(request: dict):
    from pymongo.operations import (
        DeleteMany,
        DeleteOne,
        InsertOne,
        ReplaceOne,
        UpdateMany,
        UpdateOne,
    )

    (kind, args), = request.items()
    ns = args["namespace"]
    rest = {k: v for k, v in args.items() if k != "namespace"}
    model = _write_model({kind: rest})
    classes = {"insertOne": InsertOne, "updateOne": UpdateOne, "updateMany": UpdateMany, "replaceOne": ReplaceOne,
               "deleteOne": DeleteOne, "deleteMany": DeleteMany}
    assert isinstance(model, classes[kind])
    model._namespace = ns  # pymongo's client-level models carry their namespace
    return model


def result_document(result):
    """The format's "Converting Returned Model Objects to Documents" for pymongo's result classes."""
    from pymongo.results import BulkWriteResult, DeleteResult, InsertManyResult, InsertOneResult, UpdateResult

    if getattr(result, "acknowledged", True) is False:  # an unacknowledged write's result: no counts to read
        return {"acknowledged": False}
    if isinstance(result, InsertOneResult):
        return {"insertedId": result.inserted_id}
    if isinstance(result, InsertManyResult):
        return {"insertedIds": {str(n): i for n, i in enumerate(result.inserted_ids)}}
    if isinstance(result, UpdateResult):
        return {"matchedCount": result.matched_count, "modifiedCount": result.modified_count,
                "upsertedCount": 0 if result.upserted_id is None else 1,
                **({"upsertedId": result.upserted_id} if result.upserted_id is not None else {})}
    if isinstance(result, DeleteResult):
        return {"deletedCount": result.deleted_count}
    if isinstance(result, BulkWriteResult):
        return bulk_document(result.bulk_api_result)
    return result


def bulk_document(raw: dict) -> dict:
    return {"deletedCount": raw.get("nRemoved", 0), "insertedCount": raw.get("nInserted", 0),
            "matchedCount": raw.get("nMatched", 0), "modifiedCount": raw.get("nModified", 0),
            "upsertedCount": raw.get("nUpserted", 0),
            "upsertedIds": {str(u["index"]): u["_id"] for u in raw.get("upserted", [])}}


class Runner:
    """Runs one test against a client made by `make_client()` (a fresh store per test); `close_client`
    disposes of it."""

    def __init__(self, make_client, close_client=lambda c: c.close()):
        self.make_client = make_client
        self.close_client = close_client

    def run(self, case: Case) -> None:
        client = self.make_client()
        try:
            self._run(client, case.spec, case.test)
        finally:
            self.close_client(client)

    # The test's entities: every client entity is the one client of this test (one store).
    def _entities(self, client, spec) -> dict:
        entities = {}
        for entry in spec.get("createEntities", []):
            (kind, e), = entry.items()
            if kind == "client":
                entities[e["id"]] = client
            elif kind == "database":
                entities[e["id"]] = entities[e["client"]].get_database(e["databaseName"],
                                                                       **_entity_options(e.get("databaseOptions")))
            elif kind == "collection":
                entities[e["id"]] = entities[e["database"]].get_collection(e["collectionName"],
                                                                           **_entity_options(e.get("collectionOptions")))
            else:
                raise NotImplementedError(f"entity {kind}")
        return entities

    def _run(self, client, spec, test) -> None:
        for data in spec.get("initialData", []):
            db = client[data["databaseName"]]
            db.drop_collection(data["collectionName"])
            if data.get("createOptions") or not data.get("documents"):
                db.create_collection(data["collectionName"], **_kwargs(data.get("createOptions") or {}))
            if data.get("documents"):
                db[data["collectionName"]].insert_many([dict(d) for d in data["documents"]])
        entities = self._entities(client, spec)
        for n, op in enumerate(test["operations"]):
            self._operation(entities, op, n)
        for data in test.get("outcome", []):
            coll = client[data["databaseName"]][data["collectionName"]]
            actual = list(coll.find({}, sort=[("_id", 1)]))
            exact(data["documents"], actual, path=f"outcome {data['collectionName']}")

    def _operation(self, entities, op, n) -> None:
        target = entities[op["object"]]
        where = f"operation {n} ({op['name']})"
        try:
            with _Deadline(OPERATION_TIMEOUT):
                result = self._call(target, op["name"], dict(op.get("arguments") or {}))
        except NeverReturns:
            raise
        except Exception as exc:  # noqa: BLE001 - the operation's error is what the test examines
            if op.get("ignoreResultAndError"):
                return
            if "expectError" not in op:
                raise Mismatch(f"{where}: unexpected error {type(exc).__name__}: {exc}") from exc
            check_error(op["expectError"], exc, entities, where)
            return
        if op.get("ignoreResultAndError"):
            return
        if "expectError" in op:
            raise Mismatch(f"{where}: expected an error, got the result {result!r}")
        if "saveResultAsEntity" in op:
            entities[op["saveResultAsEntity"]] = result
        if "expectResult" in op:
            expected = op["expectResult"]
            root = op["name"] in ("findOneAndDelete", "findOneAndReplace", "findOneAndUpdate", "findOne")
            if isinstance(expected, list) and op["name"] in ("find", "aggregate", "listIndexes", "listCollections"):
                if not isinstance(result, list) or len(result) != len(expected):
                    raise Mismatch(f"{where}: expected {len(expected)} documents, got {result!r}")
                for k, (e, a) in enumerate(zip(expected, result, strict=True)):
                    match(e, a, root=True, entities=entities, path=f"{where}[{k}]")
            else:
                try:
                    match(expected, result, root=root or isinstance(result, Mapping), entities=entities, path=where)
                except Mismatch:
                    raise

    def _call(self, target, name, args):
        if name == "find":
            filter_ = args.pop("filter", {})
            return list(target.find(filter_, **_kwargs(args)))
        if name == "findOne":
            return target.find_one(args.pop("filter", {}), **_kwargs(args))
        if name == "aggregate":
            return list(target.aggregate(args.pop("pipeline"), **_command_kwargs(args)))
        if name == "countDocuments":
            return target.count_documents(args.pop("filter"), **_command_kwargs(args))
        if name == "estimatedDocumentCount":
            return target.estimated_document_count(**_command_kwargs(args))
        if name == "distinct":
            return target.distinct(args.pop("fieldName"), args.pop("filter", None), **_command_kwargs(args))
        if name == "insertOne":
            return result_document(target.insert_one(dict(args.pop("document")), **_kwargs(args)))
        if name == "insertMany":
            return result_document(target.insert_many([dict(d) for d in args.pop("documents")], **_kwargs(args)))
        if name in ("updateOne", "updateMany"):
            method = target.update_one if name == "updateOne" else target.update_many
            return result_document(method(args.pop("filter"), args.pop("update"), **_kwargs(args)))
        if name == "replaceOne":
            return result_document(target.replace_one(args.pop("filter"), args.pop("replacement"), **_kwargs(args)))
        if name in ("deleteOne", "deleteMany"):
            method = target.delete_one if name == "deleteOne" else target.delete_many
            return result_document(method(args.pop("filter"), **_kwargs(args)))
        if name == "findOneAndDelete":
            return target.find_one_and_delete(args.pop("filter"), **_kwargs(args, keep=_FIND_AND_MODIFY_FIELDS))
        if name == "findOneAndReplace":
            return target.find_one_and_replace(args.pop("filter"), args.pop("replacement"),
                                               **_kwargs(args, keep=_FIND_AND_MODIFY_FIELDS))
        if name == "findOneAndUpdate":
            return target.find_one_and_update(args.pop("filter"), args.pop("update"),
                                              **_kwargs(args, keep=_FIND_AND_MODIFY_FIELDS))
        if name == "bulkWrite":
            requests = [_write_model(r) for r in args.pop("requests")]
            return result_document(target.bulk_write(requests, **_kwargs(args)))
        if name == "clientBulkWrite":
            models = [_client_write_model(r) for r in args.pop("models")]
            return target.bulk_write(models, **_kwargs(args))
        if name == "createIndex":
            keys = args.pop("keys")
            return target.create_index(list(keys.items()), **_kwargs(args))
        if name == "dropIndex":
            return target.drop_index(args.pop("name"), **_kwargs(args))
        if name == "listIndexes":
            return list(target.list_indexes(**_kwargs(args)))
        if name == "createCollection":
            target.create_collection(args.pop("collection"), **_kwargs_create(args))
            return None
        if name == "dropCollection":
            target.drop_collection(args.pop("collection"), **_kwargs(args))
            return None
        if name == "modifyCollection":
            return target.command({"collMod": args.pop("collection"), **args})
        if name == "listCollections":
            return list(target.list_collections(**_kwargs(args)))
        if name == "runCommand":
            return target.command(args.pop("command"), **_kwargs(args, drop=("commandName",)))
        raise NotImplementedError(f"operation {name}")


def _entity_options(options: dict | None) -> dict:
    """A database's or collection's options (the format's `databaseOptions`/`collectionOptions`) as
    pymongo's get_database/get_collection take them."""
    from pymongo import WriteConcern
    from pymongo.read_concern import ReadConcern
    from pymongo.read_preferences import make_read_preference, read_pref_mode_from_name

    out = {}
    for key, value in (options or {}).items():
        if key == "readConcern":
            out["read_concern"] = ReadConcern(**value)
        elif key == "writeConcern":
            out["write_concern"] = WriteConcern(**value)
        elif key == "readPreference":
            rest = {k: v for k, v in value.items() if k != "mode"}
            out["read_preference"] = make_read_preference(read_pref_mode_from_name(value["mode"]),
                                                          rest.get("tagSets"), rest.get("maxStalenessSeconds", -1))
        else:
            raise NotImplementedError(f"entity option {key}")
    return out


def _kwargs_create(args: dict) -> dict:
    """create_collection passes the server's own option names through (pymongo: **kwargs to `create`)."""
    return dict(args)


def _error_code(exc):
    from pymongo.errors import BulkWriteError

    if isinstance(exc, BulkWriteError):
        errors = (exc.details or {}).get("writeErrors") or []
        return errors[0].get("code") if errors else exc.code
    return getattr(exc, "code", None)


def _error_details(exc) -> dict:
    from pymongo.errors import BulkWriteError

    details = getattr(exc, "details", None) or {}
    if isinstance(exc, BulkWriteError):
        errors = details.get("writeErrors") or []
        return dict(errors[0]) if errors else {}
    return dict(details)


def is_client_error(exc) -> bool:
    """An error the client raises before (or without) a server's answer: pymongo's own validation
    (InvalidOperation, ConfigurationError, InvalidName, DocumentTooLarge, ...) and the TypeError /
    ValueError of bad arguments; a server's answer is an OperationFailure. A Python error of another
    kind (KeyError, AttributeError, NotImplementedError, ...) is neither: a bug, never "the client"."""
    from bson.errors import BSONError
    from pymongo.errors import OperationFailure, PyMongoError

    if isinstance(exc, OperationFailure):
        return False
    return isinstance(exc, PyMongoError | BSONError | TypeError | ValueError) and \
        not isinstance(exc, NotImplementedError)


def check_error(expected: dict, exc: BaseException, entities, where) -> None:
    from pymongo.errors import BulkWriteError, OperationFailure, PyMongoError

    if not isinstance(exc, PyMongoError | TypeError | ValueError) or isinstance(exc, NotImplementedError):
        raise Mismatch(f"{where}: {type(exc).__name__} is not a driver's error: {exc}")
    if "isClientError" in expected and bool(expected["isClientError"]) != is_client_error(exc):
        raise Mismatch(f"{where}: expected {'a client' if expected['isClientError'] else 'a server'} error, got "
                       f"{type(exc).__name__}: {exc}")
    if "errorContains" in expected:
        messages = [str(exc)]
        if isinstance(exc, BulkWriteError):
            messages += [str(e.get("errmsg", "")) for e in (exc.details or {}).get("writeErrors", [])]
        if not any(expected["errorContains"].lower() in m.lower() for m in messages):
            raise Mismatch(f"{where}: error {exc} does not contain {expected['errorContains']!r}")
    if "errorCode" in expected:
        if not isinstance(exc, OperationFailure) or _error_code(exc) != expected["errorCode"]:
            raise Mismatch(f"{where}: expected error code {expected['errorCode']}, got "
                           f"{type(exc).__name__} code {getattr(exc, 'code', None)}: {exc}")
    if "errorCodeName" in expected:
        name = _error_details(exc).get("codeName", "")
        if str(name).lower() != expected["errorCodeName"].lower():
            raise Mismatch(f"{where}: expected codeName {expected['errorCodeName']}, got {name!r}: {exc}")
    for label in expected.get("errorLabelsContain", []):
        if not (isinstance(exc, PyMongoError) and exc.has_error_label(label)):
            raise Mismatch(f"{where}: error lacks the label {label}")
    for label in expected.get("errorLabelsOmit", []):
        if isinstance(exc, PyMongoError) and exc.has_error_label(label):
            raise Mismatch(f"{where}: error has the label {label}")
    if "errorResponse" in expected:
        if not isinstance(exc, OperationFailure):
            raise Mismatch(f"{where}: expected a server response, got {type(exc).__name__}: {exc}")
        match(expected["errorResponse"], _error_details(exc), root=True, entities=entities, path=f"{where} response")
    if "expectResult" in expected:
        if not isinstance(exc, BulkWriteError):
            raise Mismatch(f"{where}: expected a partial result, got {type(exc).__name__}: {exc}")
        match(expected["expectResult"], bulk_document(exc.details), root=True, entities=entities,
              path=f"{where} partial result")
    if "writeErrors" in expected:
        errors = {str(e["index"]): e for e in (getattr(exc, "details", None) or {}).get("writeErrors", [])}
        match(expected["writeErrors"], errors, root=False, entities=entities, path=f"{where} writeErrors")
    if expected.get("isTimeoutError"):
        raise Mismatch(f"{where}: timeoutMS is not implemented by this runner")


# --- clients ----------------------------------------------------------------------------------------


class EngineClients:
    """docstore.Client on a temporary file per test, as the project's tests open one."""

    def __init__(self):
        self._dirs = {}

    def make(self):
        import docstore

        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        tmp = tempfile.mkdtemp(prefix="docstore-spec-", dir=shm)  # as tests/conftest's stores: in memory
        client = docstore.Client(str(Path(tmp) / "spec.sqlite3"), default_db="spec", tz_aware=True)
        self._dirs[id(client)] = tmp
        return client

    def close(self, client):
        client.close()
        shutil.rmtree(self._dirs.pop(id(client)), ignore_errors=True)


def engine_version() -> tuple:
    clients = EngineClients()
    client = clients.make()
    try:
        return _version(client.admin.command("buildInfo")["version"])
    finally:
        clients.close(client)


def mongomock_client():
    import mongomock

    return mongomock.MongoClient(tz_aware=True)


# --- the report ---------------------------------------------------------------------------------------


def outcome(runner: Runner, case: Case) -> tuple[str, str]:
    """("passed" | "failed" | "skipped", detail) of one case."""
    if case.skip:
        return "skipped", case.skip
    try:
        runner.run(case)
    except NeverReturns as exc:
        return "failed", f"never returns: {exc}"
    except Exception as exc:  # noqa: BLE001 - a failing test, reported
        return "failed", f"{type(exc).__name__}: {str(exc)[:300]}"
    return "passed", ""


def report(path: Path) -> str:
    import mongomock

    control_name = f"mongomock {mongomock.__version__}"
    version = engine_version()
    all_cases = cases(version)
    clients = EngineClients()
    engine = Runner(clients.make, clients.close)
    control = Runner(mongomock_client, lambda c: c.close())
    rows = {}
    totals = {"passed": 0, "xfail": 0, "skipped": 0, "failed": 0, "mongomock": 0, "in scope": 0}
    unexpected = []
    for case in all_cases:
        row = rows.setdefault(case.file, {"passed": 0, "xfail": {}, "skipped": {}, "failed": 0, "mongomock": 0,
                                          "in scope": 0})
        status, detail = outcome(engine, case)
        if status == "skipped":
            row["skipped"][detail] = row["skipped"].get(detail, 0) + 1
            totals["skipped"] += 1
            continue
        row["in scope"] += 1
        totals["in scope"] += 1
        if outcome(control, case)[0] == "passed":
            row["mongomock"] += 1
            totals["mongomock"] += 1
        if status == "passed":
            row["passed"] += 1
            totals["passed"] += 1
            if case.id in EXPECTED_FAILURES:
                unexpected.append(f"{case.id}: passes, but is listed in EXPECTED_FAILURES")
        elif case.id in EXPECTED_FAILURES:
            reason = EXPECTED_FAILURES[case.id]
            row["xfail"][reason] = row["xfail"].get(reason, 0) + 1
            totals["xfail"] += 1
        else:
            row["failed"] += 1
            totals["failed"] += 1
            unexpected.append(f"{case.id}: {detail}")
    scope_n = totals["in scope"]

    def pct(n):
        return f"{100 * n / scope_n:.0f}%" if scope_n else "-"

    def reasons(d):
        return "; ".join(f"{k} ({v})" if v > 1 else k for k, v in sorted(d.items())) or ""

    lines = [
        "# Conformance: MongoDB's driver specification tests",
        "",
        "<!-- Generated by `make conformance` (python -m tests.docstore.spec_runner --write docs/conformance.md);"
        " do not edit by hand. -->",
        "",
        "The embedded engine (`docstore/`) measured by a suite nobody here wrote: MongoDB's driver",
        "specification tests in the unified test format, the CRUD (`source/crud/tests/unified/`) and",
        "index-management (`source/index-management/tests/`) files every MongoDB driver runs against a",
        "real server, read from `../shared/mongodb-specs/` (see its README and licence). The same files",
        "run in CI: `tests/docstore/test_spec_conformance.py`, one test per spec test, a spec test the",
        "engine fails today marked as an expected failure (strict) with its cause, from one table in",
        "`tests/docstore/spec_runner.py` (`EXPECTED_FAILURES`).",
        "",
        f"At the version the engine reports (buildInfo: {'.'.join(map(str, version))}), standalone topology.",
        "Out of scope (skipped, with the reason per file below): tests for other server versions or",
        "topologies (`runOnRequirements`), sessions and transactions, fail points, tests that only",
        "assert command events, the removed `count`, Atlas Search",
        f"indexes. {control_name}, a Python imitation of MongoDB (the engine no longer borrows from it), runs the same",
        "in-scope tests as a control.",
        "",
        "| | tests |",
        "|---|---|",
        f"| in scope | {scope_n} |",
        f"| passed by docstore | {totals['passed']} ({pct(totals['passed'])}) |",
        f"| expected failures (cause in the table) | {totals['xfail']} |",
        f"| failed, not expected | {totals['failed']} |",
        f"| passed by {control_name} (control) | {totals['mongomock']} ({pct(totals['mongomock'])}) |",
        f"| skipped (out of scope) | {totals['skipped']} |",
        "",
        "| file | in scope | passed | expected failure (why) | mongomock | skipped (why) |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        xf = sum(row["xfail"].values())
        failed = f" **{row['failed']} failed**" if row["failed"] else ""
        lines.append(f"| {name} | {row['in scope']} | {row['passed']}{failed} | "
                     f"{f'{xf}: ' + reasons(row['xfail']) if xf else ''} | {row['mongomock']} | "
                     f"{reasons(row['skipped'])} |")
    text = "\n".join(lines) + "\n"
    path.write_text(text)
    return "\n".join(unexpected)


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", default=str(ROOT / "docs" / "conformance.md"), help="the page to write")
    args = parser.parse_args(argv)
    problems = report(Path(args.write))
    if problems:
        print("Not as the expected-failure table says:\n" + problems)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


class ServerClients:
    """pymongo's MongoClient against the engine served over the wire protocol (docstore/server): one
    server for the run, a fresh store behind it for each test, so each test starts empty as on a
    fresh docstore.Client."""

    def __init__(self):
        self._server = None
        self._dirs = []

    def _start(self):
        import threading

        from docstore.server.tcp import Server

        self._server = Server(self._engine(), "127.0.0.1", 0)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()

    def _engine(self):
        from docstore.server.commands import Engine

        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        tmp = tempfile.mkdtemp(prefix="docstore-wire-spec-", dir=shm)
        self._dirs.append(tmp)
        return Engine(str(Path(tmp) / "spec.sqlite3"), db="spec")

    def make(self):
        from pymongo import MongoClient

        if self._server is None:
            self._start()
        else:
            old, self._server.engine = self._server.engine, self._engine()
            self._server.engine.me = old.me
            old.client.close()
            shutil.rmtree(self._dirs.pop(0), ignore_errors=True)
        return MongoClient(self._server.uri, tz_aware=True, serverSelectionTimeoutMS=5000)

    def close(self, client):
        client.close()
