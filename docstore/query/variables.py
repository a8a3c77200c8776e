"""`let`: variables an operation defines for its expressions (MongoDB manual, the `let` option of
find, aggregate, update, delete and findAndModify, 5.0+).

Each value of `let` is an expression evaluated once, before the operation reads a document: a
constant, `{$literal: v}`, `{$rand: {}}`, or a document of those. Its variables are then used as
`$$name` (or `$$name.field`) in the operation's aggregation expressions: inside `$expr` in a
query filter, and anywhere in an aggregation or update pipeline except in a `$match` outside its
`$expr`. The engine binds them by replacing each use with `{$literal: value}` before the stages run.

Server rules kept: a user variable name starts with a lower-case letter (code 16870 otherwise),
so system variables (`$$ROOT`, `$$NOW`, ...) are not `let`'s to set; a `let` that is not a
document is code 14 TypeMismatch. An expression in `let` beyond those
above is refused with code 238 NotImplemented.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping

from pymongo.errors import OperationFailure

_NAME = re.compile(r"^[a-z\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*\Z")


def _error(message: str, code: int, name: str) -> OperationFailure:
    return OperationFailure(message, code, {"ok": 0.0, "errmsg": message, "code": code, "codeName": name})


def _evaluate(value):
    if isinstance(value, Mapping):
        if len(value) == 1 and next(iter(value)) == "$literal":
            return value["$literal"]
        if len(value) == 1 and next(iter(value)) == "$rand":
            return random.random()
        if any(str(k).startswith("$") for k in value):
            raise _error(f"the let expression {dict(value)} is not implemented by the embedded engine", 238,
                         "NotImplemented")
        return {k: _evaluate(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_evaluate(v) for v in value]
    if isinstance(value, str) and value.startswith("$"):
        raise _error(f"the let expression {value!r} (a field path or variable) is not implemented by the embedded "
                     "engine", 238, "NotImplemented")
    return value


def bind(let) -> dict | None:
    """The variables of an operation's `let` (None without one)."""
    if let is None:
        return None
    if not isinstance(let, Mapping):
        raise _error("BSON field 'let' is the wrong type, expected type 'object'", 14, "TypeMismatch")
    out = {}
    for name, value in let.items():
        if not _NAME.match(str(name)):
            raise _error(f"'{name}' starts with an invalid character for a user variable name", 16870,
                         "Location16870")
        out[name] = _evaluate(value)
    return out


def _use(text: str, variables: dict):
    """The value `$$name` or `$$name.a.b` stands for, or the text itself when it names no variable of `let`."""
    name, _, path = text[2:].partition(".")
    if name not in variables:
        return text
    value = variables[name]
    for part in path.split(".") if path else ():
        value = value.get(part) if isinstance(value, Mapping) else None
    return {"$literal": value}


def in_expression(value, variables: dict):
    if isinstance(value, str) and value.startswith("$$"):
        return _use(value, variables)
    if isinstance(value, Mapping):
        if len(value) == 1 and next(iter(value)) == "$literal":
            return value
        return {k: in_expression(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [in_expression(v, variables) for v in value]
    return value


def in_filter(spec, variables: dict | None):
    """A query filter with the variables bound inside its `$expr` (and the logical operators around it)."""
    if not variables or not isinstance(spec, Mapping):
        return spec
    out = {}
    for key, value in spec.items():
        if key == "$expr":
            out[key] = in_expression(value, variables)
        elif key in ("$and", "$or", "$nor") and isinstance(value, list):
            out[key] = [in_filter(v, variables) for v in value]
        else:
            out[key] = value
    return out


def in_pipeline(pipeline, variables: dict | None):
    """An aggregation or update pipeline with the variables bound (a `$match` only inside its `$expr`)."""
    if not variables or not isinstance(pipeline, list):
        return pipeline
    out = []
    for stage in pipeline:
        if isinstance(stage, Mapping) and set(stage) == {"$match"}:
            out.append({"$match": in_filter(stage["$match"], variables)})
        else:
            out.append(in_expression(stage, variables))
    return out
