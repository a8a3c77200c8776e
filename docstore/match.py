"""The query matcher: whether a document matches a filter (MongoDB manual, "Query Predicates").

mongomock's `filter_applies`, until the engine has a matcher of its own; every module of the
engine that matches a document imports it from here (semantics re-exports it). `prepare(filter)`
rewrites, once per operation, what that matcher does not implement into what it does:

- `{f: {$type: "null"}}` (also the alias 10, or in a list of types) matches where `f` holds null
  or an array holding null, not where it is missing (manual, "$type": "null" is BSON type 10):
  `{f: {$exists: true, $eq: null}}`;
- `{f: {$type: [t1, t2]}}` (a list of types: any of them) is an `$or` of one type each.
"""

from __future__ import annotations

from collections.abc import Mapping

from mongomock.filtering import filter_applies
from pymongo.errors import OperationFailure

__all__ = ["filter_applies", "prepare"]

_NULL_TYPES = ("null", 10)


def _is_null_type(value) -> bool:
    return any(value == t and type(value) is type(t) for t in _NULL_TYPES)


def _rewritten(types) -> bool:
    return isinstance(types, list) or _is_null_type(types)


def prepare(spec):
    """The filter with the rewrites above (the same object when there is nothing to rewrite)."""
    if not isinstance(spec, Mapping) or not _needs(spec):
        return spec
    clauses = []
    for key, cond in spec.items():
        if key in ("$and", "$or", "$nor") and isinstance(cond, list):
            clauses.append({key: [prepare(c) for c in cond]})
        elif isinstance(cond, Mapping) and "$type" in cond and _rewritten(cond["$type"]):
            rest = {k: v for k, v in cond.items() if k != "$type"}
            if rest:
                clauses.append({key: rest})
            types = cond["$type"] if isinstance(cond["$type"], list) else [cond["$type"]]
            if not types:
                raise OperationFailure("$type must match at least one type", 2, {"code": 2, "codeName": "BadValue"})
            alternatives = [{key: {"$exists": True, "$eq": None}} if _is_null_type(t) else {key: {"$type": t}}
                            for t in types]
            clauses.append(alternatives[0] if len(alternatives) == 1 else {"$or": alternatives})
        else:
            clauses.append({key: cond})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _needs(value) -> bool:
    if isinstance(value, Mapping):
        return any((k == "$type" and _rewritten(v)) or _needs(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_needs(v) for v in value)
    return False
