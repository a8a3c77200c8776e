"""The query matcher: whether a document matches a filter (MongoDB manual, "Query Predicates").

The engine's own, from the manual's pages on each operator; every module of the engine that
matches a document imports `filter_applies` from here.

- A dotted path reaches every value along it: through a document by name, through an array by
  position (`a.0`) and through each document element of an array by name ("Query an Array of
  Embedded Documents"); a path that reaches nothing reaches a missing value.
- A value that is an array is compared as a whole and element by element ("Query an Array":
  `{tags: "x"}` matches `tags: ["x", "y"]`), except by `$size`, `$elemMatch` and `$exists`.
- Comparisons use BSON's comparison order (docstore.storage.keys): numbers of every type by
  value, strings by their bytes, documents and arrays field by field; `$gt`/`$gte`/`$lt`/`$lte`
  compare only values of the operand's type family ("Comparison Query Operators": type
  bracketing). `{f: null}` matches a null and a missing `f`; `$gte`/`$lte` null too.
- `$ne`, `$nin`, `$not` and `$exists: false` are the negation of the whole path's match, so
  `{tags: {$ne: "x"}}` does not match `["x", "y"]`.
- Operators: `$eq $ne $gt $gte $lt $lte $in $nin`, `$and $or $nor $not`, `$exists`, `$type`
  (a name, a number, "number", or a list of them), `$regex` with `$options` (i, m, s, x),
  `$mod`, `$expr`, `$all`, `$elemMatch`, `$size`, `$bitsAllSet $bitsAnySet $bitsAllClear
  $bitsAnyClear`, `$comment`.

Refused with the server's error (an OperationFailure): an unknown operator, code 2 BadValue
"unknown operator: $foo" (at the top level "unknown top level operator: $foo"); a malformed
operand, code 2 with the server's message; `$where`, code 2 (a server without a JavaScript
engine: the engine has none); `$text`, code 27 IndexNotFound (the engine has no text index);
an `$expr` operator the engine does not evaluate, code 168 InvalidPipelineOperator.

Collations (docstore.query.collation) are applied by the caller, to the filter's operands and
to the document's strings, before they come here.

`prepare(filter)` rewrites, once per operation, `$type: "null"` (or 10) and a list of types into
what the planner bounds: `{f: {$exists: true, $eq: null}}` and an `$or` of one type each.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Mapping
from functools import lru_cache

from bson import ObjectId
from bson.binary import Binary
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.regex import Regex
from pymongo.errors import OperationFailure

from docstore.query.expressions import compile_expression, truthy
from docstore.query.types import NUMBER_TYPES, TYPE_ALIASES, TYPE_NUMBERS, bson_type, compare, equal, family
from docstore.storage.raw import MISSING as _MISSING

__all__ = ["filter_applies", "check", "prepare", "bad_value"]

BAD_VALUE = 2
INDEX_NOT_FOUND = 27

_NULL_TYPES = ("null", 10)
_COMPARISONS = {"$eq": lambda c: c == 0, "$ne": lambda c: c != 0, "$gt": lambda c: c > 0, "$gte": lambda c: c >= 0,
                "$lt": lambda c: c < 0, "$lte": lambda c: c <= 0}


def _failure(message: str, code: int, name: str) -> OperationFailure:
    return OperationFailure(message, code, {"ok": 0.0, "errmsg": message, "code": code, "codeName": name})


def bad_value(message: str) -> OperationFailure:
    return _failure(message, BAD_VALUE, "BadValue")


# --- paths -------------------------------------------------------------------------------------------


def _walk(value, parts: list[str], i: int, out: list) -> None:
    """Every value the path `parts[i:]` reaches from `value` (manual: dot notation through
    documents, array positions and the document elements of arrays); `_MISSING` where it ends."""
    if i == len(parts):
        out.append(value)
        return
    part = parts[i]
    if isinstance(value, Mapping):
        if part in value:
            _walk(value[part], parts, i + 1, out)
        else:
            out.append(_MISSING)
        return
    if isinstance(value, list | tuple):
        before = len(out)
        if part.isdigit():
            index = int(part)
            if index < len(value):
                _walk(value[index], parts, i + 1, out)
        for element in value:
            if isinstance(element, Mapping):
                _walk(element, parts, i, out)
        if len(out) == before:
            out.append(_MISSING)
        return
    out.append(_MISSING)


def _reached(doc, path: str) -> list:
    if "." not in path:
        if isinstance(doc, Mapping):
            return [doc.get(path, _MISSING)]
    out: list = []
    _walk(doc, path.split("."), 0, out)
    return out


# --- regular expressions -----------------------------------------------------------------------------

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE, "u": 0}


@lru_cache(maxsize=512)
def _compiled(pattern: str, options: str) -> re.Pattern:
    flags = 0
    for option in options:
        if option not in _FLAGS:
            raise _failure(f"invalid flag in regex options: {option}", 51108, "Location51108")
        flags |= _FLAGS[option]
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise _failure(f"Regular expression is invalid: {exc}", 51091, "Location51091") from exc


def _regex(value, options=None) -> re.Pattern:
    if isinstance(value, re.Pattern):
        if options:
            return _compiled(value.pattern, options)
        return value
    if isinstance(value, Regex):
        flags = value.flags
        if not isinstance(flags, str):
            flags = "".join(c for c, bit in (("i", re.I), ("m", re.M), ("s", re.S), ("x", re.X)) if flags & bit)
        return _compiled(value.pattern, options if options is not None else flags)
    if isinstance(value, str):
        return _compiled(value, options or "")
    raise bad_value("$regex has to be a string")


def _is_regex(value) -> bool:
    return isinstance(value, re.Pattern | Regex)


def _regex_matches(pattern: re.Pattern, value) -> bool:
    if isinstance(value, str):
        return pattern.search(value) is not None
    if isinstance(value, re.Pattern | Regex):  # a stored regular expression equal to the query's
        return value.pattern == pattern.pattern
    return False


def _regex_reaches(pattern: re.Pattern, values: list) -> bool:
    return any(v is not _MISSING and any(_regex_matches(pattern, e) for e in _expanded(v)) for v in values)


# --- one value against one operator ------------------------------------------------------------------


def _expanded(value):
    """The value and, for an array, each of its elements (the manual's array rule)."""
    if isinstance(value, list | tuple):
        return [value, *value]
    return [value]


def _eq_one(value, operand) -> bool:
    if operand is None:
        return value is _MISSING or value is None or (isinstance(value, list) and None in value)
    if _is_regex(operand):
        return any(isinstance(v, re.Pattern | Regex) and equal(v, operand) for v in _expanded(value))
    if value is _MISSING:
        return False
    if type(value) is not list:
        return equal(value, operand)
    return equal(value, operand) or any(equal(v, operand) for v in value)


def _in_one(value, operands) -> bool:
    for operand in operands:
        if _is_regex(operand):
            pattern = _regex(operand)
            if _regex_reaches(pattern, [value]):
                return True
        elif _eq_one(value, operand):
            return True
    return False


_REALS = (int, float)


def _order_one(value, op: str, operand) -> bool:
    test = _COMPARISONS[op]
    if type(value) in _REALS and type(operand) in _REALS and value == value and operand == operand:
        return test((value > operand) - (value < operand))  # two numbers (not NaN): compared as they are
    if operand is None:
        return op in ("$gte", "$lte") and _eq_one(value, None)
    if value is _MISSING:
        return False
    if isinstance(operand, MinKey | MaxKey):
        return any(test(compare(v, operand)) for v in _expanded(value))
    wanted = family(operand)
    return any(family(v) == wanted and test(compare(v, operand)) for v in _expanded(value))


def _type_one(value, types) -> bool:
    if value is _MISSING:
        return False
    for v in _expanded(value):
        t = bson_type(v)
        for wanted in types:
            if wanted == t or (wanted == "number" and t in NUMBER_TYPES):
                return True
    return False


def _types(operand) -> list:
    listed = operand if isinstance(operand, list) else [operand]
    if isinstance(operand, list) and not operand:
        raise bad_value("$type must match at least one type")
    out = []
    for t in listed:
        if isinstance(t, str):
            if t == "number":
                out.append("number")
            elif t in TYPE_ALIASES:
                out.append(TYPE_ALIASES[t])
            else:
                raise bad_value(f"Unknown type name alias: {t}")
        elif isinstance(t, int | float | Int64 | Decimal128) and not isinstance(t, bool):
            number = float(t.to_decimal()) if isinstance(t, Decimal128) else float(t)
            if not number.is_integer() or int(number) not in TYPE_NUMBERS:
                raise bad_value(f"Invalid numerical type code: {t}")
            out.append(int(number))
        else:
            raise bad_value(f"type must be represented as a number or a string, not {type(t).__name__}")
    return out


def _whole(value, what: str):
    """An integral number (a float or decimal holding one) as an int; BadValue otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal128):
        raise bad_value(f"{what} must be a number")
    number = value.to_decimal() if isinstance(value, Decimal128) else value
    if isinstance(number, float) and (math.isnan(number) or math.isinf(number)):
        raise bad_value(f"{what} must be a finite number")
    if number != int(number):
        raise bad_value(f"{what} must be a whole number")
    return int(number)


def _mod_operand(operand) -> tuple[int, int]:
    if not isinstance(operand, list | tuple):
        raise bad_value("malformed mod, needs to be an array")
    if len(operand) < 2:
        raise bad_value("malformed mod, not enough elements")
    if len(operand) > 2:
        raise bad_value("malformed mod, too many elements")
    for part in operand:
        if isinstance(part, bool) or not isinstance(part, int | float | Decimal128):
            raise bad_value("malformed mod, divisor not a number" if part is operand[0]
                            else "malformed mod, remainder not a number")
    divisor, remainder = (int(p.to_decimal()) if isinstance(p, Decimal128) else
                          (int(p) if math.isfinite(p) else None) for p in operand)
    if divisor is None or remainder is None:
        raise bad_value("malformed mod, divisor and remainder must be finite numbers")
    if divisor == 0:
        raise bad_value("divisor cannot be 0")
    return divisor, remainder


def _mod_one(value, divisor: int, remainder: int) -> bool:
    for v in _expanded(value):
        if isinstance(v, bool) or not isinstance(v, int | float | Decimal128):
            continue
        number = v.to_decimal() if isinstance(v, Decimal128) else v
        if isinstance(number, float) and not math.isfinite(number):
            continue
        n = int(number)  # truncated toward zero; the remainder takes the dividend's sign (C's %)
        if (abs(n) % abs(divisor)) * (-1 if n < 0 else 1) == remainder:
            return True
    return False


def _bits_operand(op: str, operand):
    if isinstance(operand, list | tuple):
        positions = []
        for p in operand:
            if isinstance(p, bool) or not isinstance(p, int | float) or p != int(p) or p < 0:
                raise bad_value(f"{op} bit positions must be non-negative integers")
            positions.append(int(p))
        return sum(1 << p for p in set(positions))
    if isinstance(operand, bytes | Binary):
        return int.from_bytes(bytes(operand), "little")
    if isinstance(operand, bool) or not isinstance(operand, int | float | Decimal128):
        raise bad_value(f"{op} takes an Array, a number, or a BinData but received: {operand!r}")
    mask = _whole(operand, op)
    if mask < 0:
        raise bad_value(f"{op} takes a non-negative bitmask")
    return mask


def _bits_one(value, op: str, mask: int) -> bool:
    for v in _expanded(value):
        if isinstance(v, bytes | Binary):
            bits = int.from_bytes(bytes(v), "little")
        elif isinstance(v, int | float) and not isinstance(v, bool):
            if isinstance(v, float) and (not math.isfinite(v) or v != int(v) or not -2**63 <= v < 2**63):
                continue
            bits = int(v) & (2**64 - 1)  # two's complement, sign-extended past bit 63
            if int(v) < 0:
                bits |= ~(2**64 - 1)
        else:
            continue
        if op == "$bitsAllSet" and bits & mask == mask or op == "$bitsAnySet" and bits & mask or \
                op == "$bitsAllClear" and not bits & mask or op == "$bitsAnyClear" and bits & mask != mask:
            return True
    return False


def _size_operand(operand) -> int:
    if isinstance(operand, bool) or not isinstance(operand, int | float | Decimal128):
        raise bad_value("$size needs a number")
    size = operand.to_decimal() if isinstance(operand, Decimal128) else operand
    if size != int(size):
        raise bad_value("$size must be a whole number")
    if size < 0:
        raise bad_value("$size may not be negative")
    return int(size)


def _elem_match_one(value, operand) -> bool:
    if not isinstance(value, list | tuple):
        return False
    if _is_operators(operand) and next(iter(operand)) not in _LOGICAL:
        return any(_operators_match([element], operand) for element in value)
    return any(isinstance(element, Mapping | list) and filter_applies(operand, element) for element in value)


def _is_operators(cond) -> bool:
    """An operator document: its first field starts with `$` (manual: `{field: {<operator>: value}}`)."""
    return isinstance(cond, Mapping) and bool(cond) and str(next(iter(cond))).startswith("$")


def _all_one(value, operands) -> bool:
    if not operands:
        return False
    if all(isinstance(o, Mapping) and set(o) == {"$elemMatch"} for o in operands):
        return all(_elem_match_one(value, o["$elemMatch"]) for o in operands)
    for operand in operands:
        if isinstance(operand, Mapping) and "$elemMatch" in operand:
            raise bad_value("$all/$elemMatch has to be consistent")
        if _is_regex(operand):
            pattern = _regex(operand)
            if not _regex_reaches(pattern, [value]):
                return False
        elif not _eq_one(value, operand):
            return False
    return True


# --- operator documents ------------------------------------------------------------------------------


def _as_is(operand, cond):
    return operand


def _ne_operand(operand, cond):
    if _is_regex(operand):
        raise bad_value("Can't have regex as arg to $ne.")
    return operand


def _in_operand(op):
    def parse(operand, cond):
        if not isinstance(operand, list | tuple):
            raise bad_value(f"{op} needs an array")
        if any(_is_operators(o) for o in operand):
            raise bad_value(f"cannot nest $ under {op}")
        return operand
    return parse


def _regex_operand(operand, cond):
    options = cond.get("$options")
    if options is not None and not isinstance(options, str):
        raise bad_value("$options has to be a string")
    if isinstance(operand, Regex | re.Pattern) and options:
        raise bad_value("options set in both $regex and $options")
    return _regex(operand, options)


def _options_operand(operand, cond):
    if "$regex" not in cond:
        raise bad_value("$options needs a $regex")
    return operand


def _all_operand(operand, cond):
    if not isinstance(operand, list | tuple):
        raise bad_value("$all needs an array")
    for o in operand:
        if isinstance(o, Mapping) and "$elemMatch" in o:
            _elem_match_operand(o["$elemMatch"], o)
    return operand


def _elem_match_operand(operand, cond):
    if not isinstance(operand, Mapping):
        raise bad_value("$elemMatch needs an Object")
    if _is_operators(operand) and next(iter(operand)) not in _LOGICAL:
        _check_operators(operand)
    else:
        check(operand)
    return operand


def _not_operand(operand, cond):
    if _is_regex(operand):
        return _regex(operand)
    if not isinstance(operand, Mapping):
        raise bad_value("$not needs a regex or a document")
    if not operand:
        raise bad_value("$not cannot be empty")
    if not _is_operators(operand):
        raise bad_value("$not needs a regex or a document")
    _check_operators(operand)
    return operand


def _bits_parser(op):
    return lambda operand, cond: _bits_operand(op, operand)


def _geo_operand(operand, cond):
    raise _failure("geospatial operators are not implemented by the embedded engine (it has no geospatial index)",
                   238, "NotImplemented")


_LOGICAL = ("$and", "$or", "$nor", "$expr", "$where")
_BITS = ("$bitsAllSet", "$bitsAnySet", "$bitsAllClear", "$bitsAnyClear")
# Each operator's operand parsed, with the server's error for a malformed one.
_OPERANDS = {
    "$eq": _as_is, "$ne": _ne_operand, "$gt": _as_is, "$gte": _as_is, "$lt": _as_is, "$lte": _as_is,
    "$in": _in_operand("$in"), "$nin": _in_operand("$nin"), "$exists": lambda o, c: _truthy_operand(o),
    "$type": lambda o, c: _types(o), "$regex": _regex_operand, "$options": _options_operand,
    "$mod": lambda o, c: _mod_operand(o), "$size": lambda o, c: _size_operand(o), "$all": _all_operand,
    "$elemMatch": _elem_match_operand, "$not": _not_operand, "$comment": _as_is,
    **{op: _bits_parser(op) for op in _BITS},
    **{op: _geo_operand for op in ("$near", "$nearSphere", "$geoWithin", "$geoIntersects", "$within")},
}


def _parsed(op: str, operand, cond: Mapping):
    parse = _OPERANDS.get(op)
    if parse is None:
        raise bad_value(f"unknown operator: {op}")
    return parse(operand, cond)


def _check_operators(cond: Mapping) -> None:
    for op, operand in cond.items():
        _parsed(op, operand, cond)


def _operators_match(values: list, cond: Mapping) -> bool:
    """Whether the values a path reached satisfy every operator of `cond`."""
    for op, operand in cond.items():
        if op in ("$options", "$comment"):
            continue
        if op == "$elemMatch":  # its operand parsed as it is applied, element by element
            if not isinstance(operand, Mapping):
                raise bad_value("$elemMatch needs an Object")
            if not any(_elem_match_one(v, operand) for v in values):
                return False
            continue
        if op == "$not" and isinstance(operand, Mapping):
            if not operand or not _is_operators(operand):
                _not_operand(operand, cond)
            if _operators_match(values, operand):
                return False
            continue
        parsed = _parsed(op, operand, cond)
        if op == "$eq":
            if not any(_eq_one(v, parsed) for v in values):
                return False
        elif op == "$ne":
            if any(_eq_one(v, parsed) for v in values):
                return False
        elif op in ("$gt", "$gte", "$lt", "$lte"):
            if _is_regex(parsed) and op in ("$gte", "$lte"):
                if not any(_eq_one(v, parsed) for v in values):
                    return False
            elif not any(_order_one(v, op, parsed) for v in values):
                return False
        elif op in ("$in", "$nin"):
            if any(_in_one(v, parsed) for v in values) != (op == "$in"):
                return False
        elif op == "$exists":
            if any(v is not _MISSING for v in values) != parsed:
                return False
        elif op == "$type":
            if not any(_type_one(v, parsed) for v in values):
                return False
        elif op in ("$regex", "$not"):  # a pattern; `$not` of one: none of the values matches it
            if _regex_reaches(parsed, values) != (op == "$regex"):
                return False
        elif op == "$mod":
            if not any(_mod_one(v, *parsed) for v in values):
                return False
        elif op == "$size":
            if not any(isinstance(v, list | tuple) and len(v) == parsed for v in values):
                return False
        elif op == "$all":
            if not any(_all_one(v, parsed) for v in values):
                return False
        elif op in _BITS:
            if not any(_bits_one(v, op, parsed) for v in values):
                return False
    return True


def check(spec) -> None:
    """The filter's operators and operands checked once, as a server parses a query before it
    reads a document: a malformed filter fails even on an empty collection."""
    if spec is None:
        return
    if not isinstance(spec, Mapping):
        raise bad_value("a query filter must be a document")
    for key, cond in spec.items():
        if key in ("$and", "$or", "$nor"):
            for clause in _clauses(key, cond):
                check(clause)
        elif key.startswith("$"):
            _top_level(key, cond)
        elif _is_operators(cond):
            _check_operators(cond)
        elif _is_regex(cond):
            _regex(cond)


def _top_level(key: str, cond) -> None:
    """The other top-level operators: `$expr` and `$comment` pass; the rest are refused."""
    if key == "$expr":
        compile_expression(cond)  # its operators checked (docstore.query.expressions)
        return
    if key == "$comment":
        return
    if key == "$where":
        raise bad_value("no globalScriptEngine in $where parsing")
    if key == "$text":
        raise _failure("text index required for $text query", INDEX_NOT_FOUND, "IndexNotFound")
    if key == "$jsonSchema":
        raise _failure("$jsonSchema is not implemented by the embedded engine", 238, "NotImplemented")
    raise bad_value(f"unknown top level operator: {key}")


def _truthy_operand(operand) -> bool:
    """`$exists`' operand as the server reads it: false, 0 and null are false, anything else true."""
    return not (operand is None or operand is False or (isinstance(operand, int | float) and operand == 0))


def _clauses(op: str, cond) -> list:
    if not isinstance(cond, list | tuple):
        raise bad_value(f"{op} must be an array")
    if not cond:
        raise bad_value("$and/$or/$nor must be a nonempty array")
    for clause in cond:
        if not isinstance(clause, Mapping):
            raise bad_value("$or/$and/$nor entries need to be full objects")
    return list(cond)


def filter_applies(spec, doc) -> bool:
    """Whether `doc` matches the query `spec` (the rules above)."""
    if spec is None:
        return True
    if not isinstance(spec, Mapping):
        raise bad_value("a query filter must be a document")
    for key, cond in spec.items():
        if key.startswith("$"):
            if key == "$and":
                if not all(filter_applies(c, doc) for c in _clauses(key, cond)):
                    return False
            elif key == "$or":
                if not any(filter_applies(c, doc) for c in _clauses(key, cond)):
                    return False
            elif key == "$nor":
                if any(filter_applies(c, doc) for c in _clauses(key, cond)):
                    return False
            elif key == "$expr":  # an aggregation expression (docstore.query.expressions)
                if not truthy(compile_expression(cond)(doc, {})):
                    return False
            elif key != "$comment":
                _top_level(key, cond)
            continue
        values = _reached(doc, key)
        if _is_operators(cond):
            if not _operators_match(values, cond):
                return False
        elif _is_regex(cond):
            pattern = _regex(cond)
            if not _regex_reaches(pattern, values):
                return False
        elif not any(_eq_one(v, cond) for v in values):
            return False
    return True


# --- prepare -------------------------------------------------------------------------------------------


def _is_null_type(value) -> bool:
    return any(value == t and type(value) is type(t) for t in _NULL_TYPES)


def _rewritten(types) -> bool:
    return isinstance(types, list) or _is_null_type(types)


def prepare(spec):
    """The filter checked (`check`) and with the rewrites above (the same object when there is
    nothing to rewrite)."""
    check(spec)
    return _rewrite(spec)


def _rewrite(spec):
    if not isinstance(spec, Mapping) or not _needs(spec):
        return spec
    clauses = []
    for key, cond in spec.items():
        if key in ("$and", "$or", "$nor") and isinstance(cond, list):
            clauses.append({key: [_rewrite(c) for c in cond]})
        elif isinstance(cond, Mapping) and "$type" in cond and _rewritten(cond["$type"]):
            rest = {k: v for k, v in cond.items() if k != "$type"}
            if rest:
                clauses.append({key: rest})
            types = cond["$type"] if isinstance(cond["$type"], list) else [cond["$type"]]
            if not types:
                raise bad_value("$type must match at least one type")
            alternatives = [{key: {"$exists": True, "$eq": None}} if _is_null_type(t) else {key: {"$type": t}}
                            for t in types]
            clauses.append(alternatives[0] if len(alternatives) == 1 else {"$or": alternatives})
        else:
            clauses.append({key: cond})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


# Values of exactly these types hold no `$type` to rewrite: `_needs` answers for them without a walk.
_LEAVES = frozenset((str, int, float, bool, type(None), bytes, ObjectId, _dt.datetime))


def _needs(value) -> bool:
    kind = type(value)
    if kind in _LEAVES:
        return False
    if kind is dict:
        return any((k == "$type" and _rewritten(v)) or (type(v) not in _LEAVES and _needs(v)) for k, v in value.items())
    if isinstance(value, Mapping):
        return any((k == "$type" and _rewritten(v)) or _needs(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_needs(v) for v in value)
    return False
