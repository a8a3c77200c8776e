"""Schema validation: a collection's `validator` checked on every insert and update (MongoDB
manual, "Schema Validation").

A validator is a query filter (query operators; `$jsonSchema` is refused with code 238
NotImplemented, as are `$where`, `$near` and `$text`, which a server does not allow in one either,
code 2). `validationLevel` "strict" (the default) checks every insert and update, "moderate"
only updates of documents that already met the validator, "off" nothing; `validationAction`
"error" (the default) fails the write with code 121 DocumentValidationFailure and an `errInfo`
naming the document and the validator's clauses it does not meet, "warn" lets it through (a
server writes a log line). `bypass_document_validation=True` skips it.
"""

from __future__ import annotations

from collections.abc import Mapping

from pymongo.errors import OperationFailure, WriteError

from docstore.query.match import filter_applies, prepare

OPTIONS = ("validator", "validationLevel", "validationAction")


def _fail(message: str, code: int) -> OperationFailure:
    names = {2: "BadValue", 238: "NotImplemented", 14: "TypeMismatch"}
    return OperationFailure(message, code, {"ok": 0.0, "errmsg": message, "code": code, "codeName": names[code]})


def _walk(value):
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield k
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)


def options(given: Mapping) -> dict:
    """The validation options of a `create` or `collMod`, checked."""
    out = {}
    if "validator" in given:
        validator = given["validator"]
        if not isinstance(validator, Mapping):
            raise _fail("'validator' must be an object", 14)
        keys = set(_walk(validator))
        if "$jsonSchema" in keys:
            raise _fail("$jsonSchema validators are not implemented by the embedded engine", 238)
        for banned in ("$where", "$near", "$nearSphere", "$text", "$expr"):
            if banned in keys:
                if banned == "$expr":
                    raise _fail("$expr validators are not implemented by the embedded engine", 238)
                raise _fail(f"{banned} is not allowed in collection validators", 2)
        out["validator"] = dict(validator)
    if "validationLevel" in given:
        if given["validationLevel"] not in ("off", "strict", "moderate"):
            raise _fail(f"Enumeration value '{given['validationLevel']}' for field 'validationLevel' is not a valid "
                        "value.", 2)
        out["validationLevel"] = given["validationLevel"]
    if "validationAction" in given:
        if given["validationAction"] not in ("error", "warn"):
            raise _fail(f"Enumeration value '{given['validationAction']}' for field 'validationAction' is not a valid "
                        "value.", 2)
        out["validationAction"] = given["validationAction"]
    return out


def check(collection_options: Mapping, new: dict, old: dict | None = None) -> None:
    """Raise code 121 when `new` (replacing `old`, or inserted) does not meet the collection's validator."""
    validator = collection_options.get("validator")
    if not validator or collection_options.get("validationLevel", "strict") == "off":
        return
    spec = prepare(validator)
    if filter_applies(spec, new):
        return
    if collection_options.get("validationLevel") == "moderate" and old is not None and \
            not filter_applies(spec, old):
        return  # moderate: a document that did not meet it before is not checked
    if collection_options.get("validationAction", "error") == "warn":
        return
    failed = [{"index": n, "details": {"specifiedAs": {field: cond}, "reason": "expression did not match"}}
              for n, (field, cond) in enumerate(validator.items()) if not filter_applies(prepare({field: cond}), new)]
    msg = "Document failed validation"
    raise WriteError(msg, 121, {"index": 0, "code": 121, "codeName": "DocumentValidationFailure", "errmsg": msg,
                                "errInfo": {"failingDocumentId": new.get("_id"),
                                            "details": {"operatorName": "$and", "clausesNotSatisfied": failed}}})
