"""The query matcher: whether a document matches a filter (MongoDB manual, "Query Predicates").

mongomock's `filter_applies`, until the engine has a matcher of its own; every module of the
engine that matches a document imports it from here (semantics re-exports it). `prepare(filter)`
rewrites, once per operation, what that matcher does not implement into what it does:

- `{f: {$type: "null"}}` (also the alias 10, or in a list of types) matches where `f` holds null
  or an array holding null, not where it is missing (manual, "$type": "null" is BSON type 10):
  `{f: {$exists: true, $eq: null}}`;
- `{f: {$type: [t1, t2]}}` (a list of types: any of them) is an `$or` of one type each.

A top-level `$expr` is evaluated here when it uses only field paths, constants, `$literal`,
the comparisons (`$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`, `$cmp`), `$in`, `$and`, `$or` and
`$not` (manual, "Aggregation Operators"): values compare in BSON order with a missing field
below every value (so `{$eq: ["$missing", null]}` is false), and the result is true unless it
is false, null, missing or zero. mongomock's evaluation raised a KeyError for a missing field.
Any other `$expr` still goes to mongomock.
"""

from __future__ import annotations

from collections.abc import Mapping

from mongomock.filtering import filter_applies as _mongomock_filter_applies
from pymongo.errors import OperationFailure

from docstore.storage import keys as K

__all__ = ["filter_applies", "prepare"]

_NULL_TYPES = ("null", 10)
_MISSING = object()
_COMPARISONS = {"$eq": lambda c: c == 0, "$ne": lambda c: c != 0, "$gt": lambda c: c > 0, "$gte": lambda c: c >= 0,
                "$lt": lambda c: c < 0, "$lte": lambda c: c <= 0}


class _Unsupported(Exception):
    """An expression this module does not evaluate: mongomock does."""


def filter_applies(spec, doc) -> bool:
    """Whether `doc` matches the query `spec` (its top-level `$expr` evaluated here when it can be)."""
    if isinstance(spec, Mapping) and "$expr" in spec:
        try:
            if not _truthy(_value(spec["$expr"], doc)):
                return False
        except _Unsupported:
            return _mongomock_filter_applies(spec, doc)
        rest = {k: v for k, v in spec.items() if k != "$expr"}
        return _mongomock_filter_applies(rest, doc) if rest else True
    return _mongomock_filter_applies(spec, doc)


def _path(doc, path: str):
    value = doc
    for part in path.split("."):
        if isinstance(value, list):
            raise _Unsupported("a path through an array")
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _key(value) -> bytes:
    return b"\x00" if value is _MISSING else K.encode(value)


def _truthy(value) -> bool:
    if value is _MISSING or value is None or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0
    return True


def _value(expr, doc):
    if isinstance(expr, str):
        if expr in ("$$ROOT", "$$CURRENT"):
            return doc
        if expr.startswith("$$"):
            raise _Unsupported(expr)
        return _path(doc, expr[1:]) if expr.startswith("$") else expr
    if isinstance(expr, list):
        return [None if v is _MISSING else v for v in (_value(v, doc) for v in expr)]
    if not isinstance(expr, Mapping):
        return expr
    if len(expr) != 1 or not str(next(iter(expr))).startswith("$"):
        if any(str(k).startswith("$") for k in expr):
            raise _Unsupported("an operator beside other fields")
        return {k: v for k, v in ((k, _value(v, doc)) for k, v in expr.items()) if v is not _MISSING}
    (op, args), = expr.items()
    if op == "$literal":
        return args
    if op in _COMPARISONS or op == "$cmp":
        if not isinstance(args, list) or len(args) != 2:
            raise _Unsupported(f"{op} with {args!r}")
        a, b = (_key(_value(arg, doc)) for arg in args)
        order = (a > b) - (a < b)
        return order if op == "$cmp" else _COMPARISONS[op](order)
    if op in ("$and", "$or"):
        values = [_truthy(_value(arg, doc)) for arg in (args if isinstance(args, list) else [args])]
        return all(values) if op == "$and" else any(values)
    if op == "$not":
        arg = args[0] if isinstance(args, list) and len(args) == 1 else args
        return not _truthy(_value(arg, doc))
    if op == "$in" and isinstance(args, list) and len(args) == 2:
        needle, haystack = _value(args[0], doc), _value(args[1], doc)
        if not isinstance(haystack, list):
            raise _Unsupported("$in needs an array")  # the server's error (40081): mongomock's to give
        return any(_key(needle) == _key(v) for v in haystack)
    raise _Unsupported(op)


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
