"""Aggregation expressions, the engine's own (MongoDB manual, "Aggregation Operators" and
"Expressions"), compiled once into functions of (document, variables) and applied.

Field paths (`$a.b`, through arrays as the manual's "Field Paths" describe: `$a.b` on an array
of documents is the array of their `b`s, nested arrays kept), `$$ROOT`/`$$CURRENT`/`$$REMOVE`
and the variables `$let`, `$filter`, `$map` and `let` bind; literals and `$literal`; documents
of expressions. Operators: comparison (`$eq $ne $gt $gte $lt $lte $cmp`, BSON order, a missing
value below null), boolean (`$and $or $not`), conditional (`$cond $ifNull $switch`), arithmetic
(`$add $subtract $multiply $divide $mod $abs`, and `$min $max $sum $avg` of operands or of
one array), array (`$size $arrayElemAt $first $last $filter
$map $in $indexOfArray $concatArrays $slice $isArray $reverseArray`), string (`$concat $toLower
$toUpper $strLenCP`), `$type`, `$mergeObjects`. Missing operands are null where the manual says
so. Another operator is refused as a server refuses an unknown one: code 168
InvalidPipelineOperator "Unrecognized expression '$foo'". Wrong operand types get the server's
codes (16554 arithmetic, 28689/28690 `$arrayElemAt`, 17124 `$size`, 28651 `$filter`, 40081 `$in`).

Documents may be read in place (docstore.storage.raw): a `$project` of included top-level
fields and computed ones (`compile_project`) reads only what its expressions touch, and the
usual shapes of a page of an array (`$filter` of elements whose field equals a string,
`$arrayElemAt`, `$indexOfArray`) work on the stored bytes. `compile_project` raises
`Unsupported` for any other `$project` (exclusions, dotted paths): the stage then runs as a
whole (docstore.query.pipeline).
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable, Mapping

from bson import ObjectId
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from pymongo.errors import OperationFailure

from docstore.query.types import TYPE_ALIASES, bson_type, compare, equal
from docstore.storage.raw import MISSING, RawArray, RawDocument, materialize

_DOCUMENTS = (dict, RawDocument)  # a document decoded, or read in place (docstore.storage.raw)
_ARRAYS = (list, RawArray)
INVALID_PIPELINE_OPERATOR = 168


class Unsupported(Exception):
    """A `$project` that is not of the form `compile_project` serves: the stage runs whole."""


def failure(message: str, code: int) -> OperationFailure:
    name = {168: "InvalidPipelineOperator", 2: "BadValue", 14: "TypeMismatch"}.get(code, f"Location{code}")
    return OperationFailure(message, code, {"ok": 0.0, "errmsg": message, "code": code, "codeName": name})


# --- values ---------------------------------------------------------------------------------------


def truthy(value) -> bool:
    """The manual's "Expressions" truth: false, null, missing and zero are false."""
    if value is MISSING or value is None or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0
    if isinstance(value, Decimal128):
        return value.to_decimal() != 0
    return True


def _null(value):
    return None if value is MISSING else value


def _through(values, parts: list[str]):
    """`$array.parts`: for each element, a document's value at the path, an array's own (nested
    arrays kept); scalars and missing values left out (manual, "Field Paths")."""
    if len(parts) == 1 and type(values) is RawArray:
        found = values.field_values(parts[0])
        if found is not None:
            return found
    out = []
    for value in values:
        if isinstance(value, _DOCUMENTS):
            got = _walk(value, parts)
            if got is not MISSING:
                out.append(got)
        elif isinstance(value, _ARRAYS):
            out.append(_through(value, parts))
    return out


def _walk(value, parts: list[str]):
    for n, part in enumerate(parts):
        if isinstance(value, _DOCUMENTS):
            value = value.get(part, MISSING)
        elif isinstance(value, _ARRAYS):
            return _through(value, parts[n:])
        else:
            return MISSING
    return value


def _path(parts: list[str], start: Callable) -> Callable:
    if not parts:
        return start

    def get(doc, scope):
        return _walk(start(doc, scope), parts)
    return get


def _field(reference: str) -> Callable:
    if reference.startswith("$$"):
        name, *parts = reference[2:].split(".")
        if not name:
            raise failure("empty variable names are not allowed", 16869)
        if name in ("ROOT", "CURRENT"):
            return _path(parts, lambda doc, scope: doc)
        if name == "REMOVE":
            return lambda doc, scope: MISSING
        if name == "NOW":
            return _path(parts, lambda doc, scope: _dt.datetime.now(_dt.UTC).replace(tzinfo=None, microsecond=(
                _dt.datetime.now(_dt.UTC).microsecond // 1000 * 1000)))

        def variable(doc, scope, name=name):
            if name not in scope:
                raise failure(f"Use of undefined variable: {name}", 17276)
            return scope[name]
        return _path(parts, variable)
    parts = reference[1:].split(".")
    if not all(parts):
        raise failure(f"FieldPath field names may not be empty strings: {reference}", 15998)
    return _path(parts, lambda doc, scope: doc)


# --- the usual shapes of a page of an array (fast on stored bytes) ---------------------------------

_FAMILIES = {type(None): "null", bool: "bool", int: "number", float: "number", str: "string",
             _dt.datetime: "date", ObjectId: "objectid"}


def _equal(a, b) -> bool:
    ta, tb = _FAMILIES.get(type(a)), _FAMILIES.get(type(b))
    if ta is not None and tb is not None:  # the usual case, without encoding either
        return ta == tb and a == b
    return equal(a, b)


def _eq(args) -> Callable:
    left, right = _two("$eq", args)
    if isinstance(args[1], str | bool | int | float) and not (isinstance(args[1], str) and args[1].startswith("$")):
        constant = args[1]

        def eq_constant(doc, scope):  # the usual shape: a path against a literal
            return _equal(left(doc, scope), constant)
        return eq_constant
    return lambda doc, scope: _equal(left(doc, scope), right(doc, scope))


def _two(op: str, args) -> tuple[Callable, Callable]:
    if not isinstance(args, list) or len(args) != 2:
        raise failure(f"Expression {op} takes exactly 2 arguments. {len(args) if isinstance(args, list) else 1} "
                      "were passed in.", 16020)
    return compile_expression(args[0]), compile_expression(args[1])


def _array_elem_at(args) -> Callable:
    array, index = _two("$arrayElemAt", args)

    def elem_at(doc, scope):
        values, i = array(doc, scope), index(doc, scope)
        if values is MISSING or values is None or i is MISSING or i is None:
            return None  # null for a null or missing operand
        if not isinstance(values, _ARRAYS):
            raise failure(f"$arrayElemAt's first argument must be an array, but is {type(values).__name__}", 28689)
        if isinstance(i, float) and i.is_integer():
            i = int(i)
        if type(i) not in (int, Int64):
            raise failure(f"$arrayElemAt's second argument must be a numeric value, but is {type(i).__name__}", 28690)
        if -len(values) <= i < len(values):
            return values[int(i)]
        return MISSING  # past either end: the field is missing
    return elem_at


def _filter(spec) -> Callable:
    if not isinstance(spec, dict) or not {"input", "cond"} <= set(spec) or set(spec) - {"input", "cond", "as",
                                                                                        "limit"}:
        raise failure("$filter requires 'input' and 'cond' (and only 'as' and 'limit' beside them)", 28648)
    name = spec.get("as", "this")
    source, condition = compile_expression(spec["input"]), compile_expression(spec["cond"])
    limit = compile_expression(spec["limit"]) if "limit" in spec else None
    cond = spec["cond"]
    if (limit is None and isinstance(cond, dict) and list(cond) == ["$eq"] and isinstance(cond["$eq"], list)
            and len(cond["$eq"]) == 2 and isinstance(cond["$eq"][0], str) and cond["$eq"][0].startswith(f"$${name}.")
            and cond["$eq"][0].count(".") == 1 and type(cond["$eq"][1]) is str and not cond["$eq"][1].startswith("$")):
        # The element of an array whose field equals a string (an id): one pass, no call per element.
        # An element that is not a document has no such field, and a value of another type is not
        # equal to a string.
        field, wanted = cond["$eq"][0].split(".", 1)[1], cond["$eq"][1]

        def keep(values, doc, scope):
            if type(values) is RawArray:
                return values.where(field, wanted)
            return [v for v in values if type(v) is dict and type(got := v.get(field)) is str and got == wanted]
    else:
        def keep(values, doc, scope):
            out = []
            most = limit(doc, scope) if limit is not None else None
            inner = dict(scope)  # the condition reads its variables and keeps none of them
            for value in values:
                if most is not None and len(out) >= most:
                    break
                inner[name] = value
                if truthy(condition(doc, inner)):
                    out.append(value)
            return out

    read = _input_array(source, "$filter", 28651)

    def filtered(doc, scope):
        values = read(doc, scope)
        return None if values is None else keep(values, doc, scope)
    return filtered


def _input_array(source: Callable, op: str, code: int) -> Callable:
    """The `input` of `$filter`/`$map`: None for a null or missing one, the server's code for a
    value that is not an array."""
    def read(doc, scope):
        values = source(doc, scope)
        if values is MISSING or values is None:
            return None
        if not isinstance(values, _ARRAYS):
            raise failure(f"input to {op} must be an array not {type(values).__name__}", code)
        return values
    return read


def _let(spec) -> Callable:
    if not isinstance(spec, dict) or set(spec) != {"vars", "in"} or not isinstance(spec["vars"], dict):
        raise failure("$let only supports an object with 'vars' and 'in'", 16875)
    names = {name: compile_expression(expression) for name, expression in spec["vars"].items()}
    body = compile_expression(spec["in"])

    def let(doc, scope):
        inner = dict(scope)
        for name, value in names.items():
            inner[name] = value(doc, scope)  # a missing value stays missing where the body reads it
        return body(doc, inner)
    return let


def _index_of_array(args) -> Callable:
    if not isinstance(args, list) or not 2 <= len(args) <= 4:
        raise failure("Expression $indexOfArray takes at least 2 arguments, and at most 4", 28667)
    array, search = compile_expression(args[0]), compile_expression(args[1])
    bounds = [compile_expression(a) for a in args[2:]]

    def index_of(doc, scope):
        values, wanted = array(doc, scope), search(doc, scope)
        if values is MISSING or values is None:
            return None  # null for a null or missing array
        if not isinstance(values, _ARRAYS):
            raise failure("$indexOfArray requires an array as a first argument", 40090)
        start, end = (b(doc, scope) for b in bounds) if len(bounds) == 2 else (
            (bounds[0](doc, scope), len(values)) if bounds else (0, len(values)))
        for i in range(int(start), min(int(end), len(values))):
            if _equal(values[i], wanted):
                return i
        return -1
    return index_of


# --- the other operators: evaluated operands in, a value out ---------------------------------------


def _number(value, op: str):
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal128):
        raise failure(f"{op} only supports numeric types, not {type(value).__name__}", 16554)
    return value.to_decimal() if isinstance(value, Decimal128) else value


def _add(*values):
    total, date = 0, None
    for v in values:
        if v is None or v is MISSING:
            return None
        if isinstance(v, _dt.datetime):
            if date is not None:
                raise failure("only one date allowed in an $add expression", 16612)
            date = v
        else:
            total += _number(v, "$add")
    return date + _dt.timedelta(milliseconds=total) if date is not None else total


def _subtract(a, b):
    if a is None or b is None or a is MISSING or b is MISSING:
        return None
    if isinstance(a, _dt.datetime) and isinstance(b, _dt.datetime):
        return Int64((a - b) // _dt.timedelta(milliseconds=1))
    if isinstance(a, _dt.datetime):
        return a - _dt.timedelta(milliseconds=_number(b, "$subtract"))
    return _number(a, "$subtract") - _number(b, "$subtract")


def _multiply(*values):
    product = 1
    for v in values:
        if v is None or v is MISSING:
            return None
        product *= _number(v, "$multiply")
    return product


def _by_divisor(op: str, code: int, apply):
    """`$divide`/`$mod`: null for a null or missing operand, code 16608/16610 for a zero divisor."""
    def evaluate(a, b):
        if a is None or b is None or a is MISSING or b is MISSING:
            return None
        a, b = _number(a, op), _number(b, op)
        if b == 0:
            raise failure(f"can't {op} by zero", code)
        return apply(a, b)
    return evaluate


_divide = _by_divisor("$divide", 16608, lambda a, b: a / b)
# The remainder takes the dividend's sign (C's fmod), as the server computes it.
_mod = _by_divisor("$mod", 16610, lambda a, b: math.fmod(a, b) if isinstance(a, float) or isinstance(b, float)
                   else (abs(a) % abs(b)) * (1 if a >= 0 else -1))


def _abs(a):
    return None if a is None or a is MISSING else abs(_number(a, "$abs"))


def _array_arg(op: str, code: int):
    def check(value):
        if not isinstance(value, _ARRAYS):
            raise failure(f"The argument to {op} must be an array, but was of type: {type(value).__name__}", code)
        return value
    return check


def _size(value):
    return len(_array_arg("$size", 17124)(value))


def _first_last(n: int):
    def pick(value):
        if value is MISSING or value is None:
            return None
        values = _array_arg("$first" if n == 0 else "$last", 28689)(value)
        return values[n] if values else MISSING
    return pick


def _in(needle, haystack):
    if not isinstance(haystack, _ARRAYS):
        raise failure("$in requires an array as a second argument", 40081)
    return any(_equal(needle, v) for v in haystack)


def _concat_arrays(*arrays):
    out = []
    for a in arrays:
        if a is None or a is MISSING:
            return None
        out.extend(_array_arg("$concatArrays", 28664)(a))
    return out


def _slice(array, *args):
    if array is None or array is MISSING:
        return None
    values = list(_array_arg("$slice", 28724)(array))
    if len(args) == 1:
        n = int(args[0])
        return values[n:] if n < 0 else values[:n]
    position, n = int(args[0]), int(args[1])
    if n <= 0:
        raise failure(f"Third argument to $slice must be positive: {n}", 28729)
    start = max(0, len(values) + position) if position < 0 else min(position, len(values))
    return values[start:start + n]


def _concat(*strings):
    out = []
    for s in strings:
        if s is None or s is MISSING:
            return None
        if not isinstance(s, str):
            raise failure(f"$concat only supports strings, not {type(s).__name__}", 16702)
        out.append(s)
    return "".join(out)


def _string_of(value, op: str) -> str:
    if value is None or value is MISSING:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float | Decimal128) and not isinstance(value, bool):
        return str(value)
    raise failure(f"can't convert from BSON type {type(value).__name__} to String", 16007)


def _type_name(value) -> str:
    if value is MISSING:
        return "missing"
    number = bson_type(materialize(value) if type(value) in (RawDocument, RawArray) else value)
    return next(name for name, n in TYPE_ALIASES.items() if n == number)


def _merge_objects(*documents):
    out = {}
    for d in documents:
        if d is None or d is MISSING:
            continue
        if not isinstance(d, _DOCUMENTS):
            raise failure(f"$mergeObjects requires object inputs, but input is of type {type(d).__name__}", 40400)
        out.update(materialize(d))
    return out


def _operands_or_array(values: tuple) -> list:
    """`$min`/`$max`/`$sum`/`$avg` in an expression: one array operand stands for its elements
    (manual: "With a single expression as its operand, if the expression resolves to an array")."""
    if len(values) == 1 and isinstance(values[0], _ARRAYS):
        return list(values[0])
    return list(values)


def _extreme(sign: int):
    def pick(*values):
        best = MISSING
        for v in _operands_or_array(values):
            if v is None or v is MISSING:
                continue  # null and missing values are ignored
            if best is MISSING or compare(v, best) * sign > 0:
                best = v
        return None if best is MISSING else best
    return pick


def _numbers(values: tuple) -> list:
    return [v for v in _operands_or_array(values)
            if isinstance(v, int | float | Decimal128) and not isinstance(v, bool)]  # others are ignored


def _sum(*values):
    return sum((v.to_decimal() if isinstance(v, Decimal128) else v) for v in _numbers(values))


def _avg(*values):
    numbers = _numbers(values)
    return _sum(*numbers) / len(numbers) if numbers else None


_COMPARE = {"$ne": lambda c: c != 0, "$gt": lambda c: c > 0, "$gte": lambda c: c >= 0, "$lt": lambda c: c < 0,
            "$lte": lambda c: c <= 0, "$cmp": lambda c: c}

# operator -> (function of the evaluated operands, (fewest, most) operands; None: any number)
_EVALUATED = {
    **{op: ((lambda t: lambda a, b: t(compare(a, b)))(test), (2, 2)) for op, test in _COMPARE.items()},
    "$add": (_add, None), "$subtract": (_subtract, (2, 2)), "$multiply": (_multiply, None),
    "$divide": (_divide, (2, 2)), "$mod": (_mod, (2, 2)), "$abs": (_abs, (1, 1)),
    "$size": (_size, (1, 1)), "$first": (_first_last(0), (1, 1)), "$last": (_first_last(-1), (1, 1)),
    "$in": (_in, (2, 2)), "$concatArrays": (_concat_arrays, None), "$slice": (_slice, (2, 3)),
    "$isArray": (lambda v: isinstance(v, _ARRAYS), (1, 1)),
    "$reverseArray": (lambda v: None if v is None or v is MISSING else list(reversed(_array_arg(
        "$reverseArray", 34435)(v))), (1, 1)),
    "$concat": (_concat, None), "$toLower": (lambda v: _string_of(v, "$toLower").lower(), (1, 1)),
    "$toUpper": (lambda v: _string_of(v, "$toUpper").upper(), (1, 1)),
    "$strLenCP": (lambda v: len(_string_of(v, "$strLenCP")), (1, 1)),
    "$type": (_type_name, (1, 1)), "$mergeObjects": (_merge_objects, None),
    "$not": (lambda v: not truthy(v), (1, 1)),
    "$min": (_extreme(-1), None), "$max": (_extreme(1), None), "$sum": (_sum, None), "$avg": (_avg, None),
}


def _evaluated(op: str, args) -> Callable:
    function, arity = _EVALUATED[op]
    listed = args if isinstance(args, list) else [args]
    if arity is not None and not arity[0] <= len(listed) <= arity[1]:
        raise failure(f"Expression {op} takes {'exactly ' + str(arity[0]) if arity[0] == arity[1] else 'between '}"
                      f"{'' if arity[0] == arity[1] else f'{arity[0]} and {arity[1]}'} arguments. {len(listed)} "
                      "were passed in.", 16020)
    operands = [compile_expression(a) for a in listed]
    return lambda doc, scope: function(*(o(doc, scope) for o in operands))


def _and_or(op: str):
    def compile_(args) -> Callable:
        operands = [compile_expression(a) for a in (args if isinstance(args, list) else [args])]
        if op == "$and":
            return lambda doc, scope: all(truthy(o(doc, scope)) for o in operands)
        return lambda doc, scope: any(truthy(o(doc, scope)) for o in operands)
    return compile_


def _cond(args) -> Callable:
    if isinstance(args, dict):
        if set(args) != {"if", "then", "else"}:
            raise failure("$cond requires 'if', 'then' and 'else'", 17080)
        args = [args["if"], args["then"], args["else"]]
    if not isinstance(args, list) or len(args) != 3:
        raise failure("Expression $cond takes exactly 3 arguments.", 16020)
    test, then, otherwise = (compile_expression(a) for a in args)
    return lambda doc, scope: then(doc, scope) if truthy(test(doc, scope)) else otherwise(doc, scope)


def _if_null(args) -> Callable:
    if not isinstance(args, list) or len(args) < 2:
        raise failure("$ifNull needs at least two arguments", 1257300)
    operands = [compile_expression(a) for a in args]

    def if_null(doc, scope):
        for operand in operands[:-1]:
            value = operand(doc, scope)
            if value is not None and value is not MISSING:
                return value
        return operands[-1](doc, scope)
    return if_null


def _switch(spec) -> Callable:
    if not isinstance(spec, dict) or not isinstance(spec.get("branches"), list) or set(spec) - {"branches",
                                                                                               "default"}:
        raise failure("$switch requires at least one branch", 40060)
    branches = [(compile_expression(b["case"]), compile_expression(b["then"])) for b in spec["branches"]]
    default = compile_expression(spec["default"]) if "default" in spec else None

    def switch(doc, scope):
        for case, then in branches:
            if truthy(case(doc, scope)):
                return then(doc, scope)
        if default is None:
            raise failure("$switch could not find a matching branch for an input, and no default was specified.",
                          40066)
        return default(doc, scope)
    return switch


def _map(spec) -> Callable:
    if not isinstance(spec, dict) or not {"input", "in"} <= set(spec) or set(spec) - {"input", "in", "as"}:
        raise failure("$map requires 'input' and 'in'", 16882)
    name = spec.get("as", "this")
    source, body = compile_expression(spec["input"]), compile_expression(spec["in"])

    read = _input_array(source, "$map", 16883)

    def mapped(doc, scope):
        values = read(doc, scope)
        if values is None:
            return None
        inner = dict(scope)
        out = []
        for value in values:
            inner[name] = value
            out.append(_null(body(doc, inner)))
        return out
    return mapped


_OPERATORS = {"$eq": _eq, "$arrayElemAt": _array_elem_at, "$filter": _filter, "$let": _let,
              "$indexOfArray": _index_of_array, "$and": _and_or("$and"), "$or": _and_or("$or"), "$cond": _cond,
              "$ifNull": _if_null, "$switch": _switch, "$map": _map}


def compile_expression(expression) -> Callable:
    """A function (document, variables) -> value of an aggregation expression (MISSING for a
    missing value); code 168 for an operator the engine does not evaluate."""
    if isinstance(expression, str):
        if expression.startswith("$"):
            return _field(expression)
        return lambda doc, scope: expression
    if isinstance(expression, list):
        items = [compile_expression(e) for e in expression]
        return lambda doc, scope: [_null(i(doc, scope)) for i in items]
    if isinstance(expression, Mapping):
        if len(expression) == 1 and str(next(iter(expression))).startswith("$"):
            (operator, argument), = expression.items()
            if operator == "$literal":
                return lambda doc, scope: argument
            if operator in _OPERATORS:
                return _OPERATORS[operator](argument)
            if operator in _EVALUATED:
                return _evaluated(operator, argument)
            raise failure(f"Unrecognized expression '{operator}'", INVALID_PIPELINE_OPERATOR)
        if any(str(k).startswith("$") for k in expression):
            raise failure(f"an expression specification must contain exactly one field, the name of the "
                          f"expression. Found {len(expression)} fields in {dict(expression)!r:.60}", 15983)
        fields = {k: compile_expression(v) for k, v in expression.items()}

        def document(doc, scope):
            out = {}
            for k, f in fields.items():
                got = f(doc, scope)
                if got is not MISSING:
                    out[k] = got
            return out
        return document
    return lambda doc, scope: expression


def compile_project(spec) -> Callable[[dict], dict]:
    """A `$project` stage of included top-level fields and computed fields, as a function of one
    document (decoded, or a RawDocument read in place: what it returns is decoded);
    Unsupported for any other (exclusions, dotted paths)."""
    if not isinstance(spec, dict):
        raise Unsupported("$project")
    keep_id = True
    included: list[str] = []
    computed: dict[str, Callable] = {}
    for key, value in spec.items():
        if not isinstance(key, str) or "." in key or key.startswith("$"):
            raise Unsupported(f"$project field {key!r}")
        if value is None or isinstance(value, float) or (type(value) in (bool, int) and value not in (0, 1)):
            raise Unsupported("a number or null as a field's projection")
        if type(value) in (bool, int):
            if key == "_id":
                keep_id = bool(value)
            elif value:
                included.append(key)
            else:
                raise Unsupported("an exclusion")
        elif isinstance(value, Mapping) and value and not str(next(iter(value))).startswith("$"):
            raise Unsupported("a nested projection")
        else:
            computed[key] = compile_expression(value)

    def project(doc: dict) -> dict:
        out = {}
        if keep_id and "_id" in doc:
            out["_id"] = doc["_id"]
        for key in included:
            if key in doc:
                out[key] = doc[key]
        for key, value in computed.items():
            got = value(doc, {})
            if got is not MISSING:
                out[key] = got
        return materialize(out) if type(doc) is RawDocument else out
    return project
