"""The `$merge` stage: an aggregation's results written into a collection (MongoDB manual,
"$merge (aggregation)").

`$merge` is the last stage (code 40601 otherwise). `into` names a collection of the same
database or `{db, coll}`; `on` (default `_id`) names the fields that find a result's document in
the target: fields other than `_id` need a unique index on exactly them (code 51183), and each
result must hold them, not null nor an array (code 51132). For a result that finds a document:
`whenMatched` "merge" (the default: the result's fields set on it), "replace", "keepExisting",
"fail" (the duplicate key error, code 11000, with `keyPattern` and `keyValue`), or a pipeline
of update stages in which `$$new` is the result (a `let` of its own is refused, code 238). For
a result that finds none: `whenNotMatched` "insert" (the default), "discard", or "fail" (code
13113). Each result is one write, as on a server: a failure stops the stage and leaves the
writes before it.
"""

from __future__ import annotations

from collections.abc import Mapping

from bson import ObjectId
from pymongo.errors import DuplicateKeyError, OperationFailure

from docstore.query import variables as V


def _error(message: str, code: int, **extra) -> OperationFailure:
    return OperationFailure(message, code, {"ok": 0.0, "errmsg": message, "code": code, **extra})


def split(pipeline: list) -> tuple[list, dict | None]:
    """(the stages before `$merge`, the `$merge` spec or None)."""
    for n, stage in enumerate(pipeline):
        if isinstance(stage, Mapping) and "$merge" in stage:
            if n != len(pipeline) - 1:
                raise _error("$merge can only be the final stage in the pipeline", 40601)
            return pipeline[:-1], stage["$merge"]
    return pipeline, None


def run(database, spec, docs: list) -> None:
    """Write `docs` into the target `spec` names (the client of `database` holds it)."""
    if isinstance(spec, str):
        spec = {"into": spec}
    if not isinstance(spec, Mapping) or "into" not in spec:
        raise _error("$merge requires an 'into' field", 40414)
    unknown = set(spec) - {"into", "on", "whenMatched", "whenNotMatched", "let"}
    if unknown:
        raise _error(f"BSON field '$merge.{sorted(unknown)[0]}' is an unknown field.", 40415)
    into = spec["into"]
    target = database.client[into.get("db", database.name)][into["coll"]] if isinstance(into, Mapping) \
        else database[into]
    on = spec.get("on", "_id")
    on = [on] if isinstance(on, str) else list(on)
    matched = spec.get("whenMatched", "merge")
    not_matched = spec.get("whenNotMatched", "insert")
    if "let" in spec:
        raise _error("$merge with 'let' is not implemented by the embedded engine", 238, codeName="NotImplemented")
    if not isinstance(matched, list) and matched not in ("merge", "replace", "keepExisting", "fail"):
        raise _error(f"Enumeration value '{matched}' for field 'whenMatched' is not a valid value.", 2)
    if not_matched not in ("insert", "discard", "fail"):
        raise _error(f"Enumeration value '{not_matched}' for field 'whenNotMatched' is not a valid value.", 2)
    if on != ["_id"]:
        uniques = [set(i["key"]) for i in target.list_indexes() if i.get("unique")]
        if set(on) not in uniques:
            raise _error("Cannot find index to verify that join fields will be unique", 51183)
    for doc in docs:
        doc = dict(doc)
        if "_id" not in doc:
            doc = {"_id": ObjectId(), **doc}
        key = {}
        for field in on:
            value = doc
            for part in field.split("."):
                value = value.get(part) if isinstance(value, Mapping) else None
            if value is None or isinstance(value, list):
                raise _error("$merge write error: 'on' field cannot be missing, null, undefined or an array", 51132)
            key[field] = value
        existing = target.find_one(key)
        if existing is None:
            if not_matched == "insert":
                target.insert_one(doc)
            elif not_matched == "fail":
                raise _error("$merge could not find a matching document in the target collection for at least one "
                             "document in the source collection", 13113)
            continue
        if matched == "fail":
            shown = ", ".join(f"{k}: {v!r}" for k, v in key.items())
            msg = (f"E11000 duplicate key error collection: {target.full_name} index: "
                   f"{'_id_' if on == ['_id'] else '_'.join(f'{f}_1' for f in on)} dup key: {{ {shown} }}")
            raise DuplicateKeyError(msg, 11000, {"ok": 0.0, "errmsg": msg, "code": 11000, "codeName": "DuplicateKey",
                                                 "keyPattern": {f: 1 for f in on}, "keyValue": key})
        if matched == "keepExisting":
            continue
        if matched == "replace":
            target.replace_one({"_id": existing["_id"]}, {k: v for k, v in doc.items() if k != "_id"})
        elif matched == "merge":
            fields = {k: v for k, v in doc.items() if k != "_id"}
            if fields:
                target.update_one({"_id": existing["_id"]}, {"$set": fields})
        else:
            target.update_one({"_id": existing["_id"]}, V.in_pipeline(matched, {"new": doc}))
