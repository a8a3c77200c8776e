"""A `$project` stage evaluated by the engine itself, for the expressions a page of an array
needs: field paths (also the last step through an array of documents), `$$variables`,
`$arrayElemAt`, `$filter` with an `$eq` condition, `$indexOfArray` of a scalar, `$let` and
`$literal` (the MongoDB manual's "Aggregation Operators" for each).

The pipeline otherwise runs through mongomock's implementation (semantics.run_pipeline),
which parses every expression again for every element it is applied to: a `$filter` over
the 3,000 top-level replies of a nested discussion, twenty times for a page of twenty, cost
it about 700 ms. Here an expression is compiled once into a function and applied.

Only what is certain is answered here: a value this module does not model (a path through
an array, a comparison of documents or arrays, a missing operand of `$eq`, an index that is
not a whole number) raises `Unsupported`, and the stage is handed to mongomock whole.
"""

from __future__ import annotations

import datetime as _dt
import numbers
from collections.abc import Callable

from bson import ObjectId

from docstore.storage.raw import MISSING, RawArray, RawDocument, materialize

_DOCUMENTS = (dict, RawDocument)  # a document decoded, or read in place (docstore.storage.raw)
_ARRAYS = (list, RawArray)


class Unsupported(Exception):
    """This stage is not one the engine evaluates itself: mongomock does."""


def _along(values, part: str) -> list:
    """`$array.part`: the `part` of each element that is a document holding it, in order (the
    manual's "Field Paths" on an array of documents). A nested array is not modelled here."""
    if type(values) is RawArray:
        found = values.field_values(part)
        if found is None:
            raise Unsupported("a path through nested arrays")
        return found
    out = []
    for value in values:
        if isinstance(value, _DOCUMENTS):
            got = value.get(part, MISSING)
            if got is not MISSING:
                out.append(got)
        elif isinstance(value, _ARRAYS):
            raise Unsupported("a path through nested arrays")
    return out


def _path(parts: list[str], start: Callable) -> Callable:
    def get(doc, scope):
        value = start(doc, scope)
        for n, part in enumerate(parts):
            if isinstance(value, _DOCUMENTS):
                value = value.get(part, MISSING)
            elif value is MISSING or value is None:
                return MISSING
            elif isinstance(value, _ARRAYS) and n == len(parts) - 1:
                return _along(value, part)  # the last step of the path, through an array
            else:
                raise Unsupported("a path through an array or a scalar")
        return value
    return get


def _field(reference: str) -> Callable:
    if reference.startswith("$$"):
        name, *parts = reference[2:].split(".")
        if not name:
            raise Unsupported(reference)
        if name in ("ROOT", "CURRENT"):
            return _path(parts, lambda doc, scope: doc)

        if len(parts) == 1:  # `$$c.id`, the usual shape: one field of a variable's document
            part = parts[0]

            def field_of(doc, scope):
                value = scope.get(name, MISSING)
                if type(value) in _DOCUMENTS:
                    return value.get(part, MISSING)
                if value is MISSING and name not in scope:
                    raise Unsupported(f"undefined variable {name}")
                if value is None or value is MISSING:  # a path into null or into a missing value: missing
                    return MISSING
                raise Unsupported("a path through an array or a scalar")
            return field_of

        def variable(doc, scope, name=name):
            if name not in scope:
                raise Unsupported(f"undefined variable {name}")
            return scope[name]
        return _path(parts, variable)
    parts = reference[1:].split(".")
    if not all(parts):
        raise Unsupported(reference)
    return _path(parts, lambda doc, scope: doc)


_FAMILIES = {type(None): "null", bool: "bool", int: "number", float: "number", str: "string",
             _dt.datetime: "date", ObjectId: "objectid"}


def _scalar(value) -> str:
    """The BSON comparison family of a value `$eq` compares here."""
    family = _FAMILIES.get(type(value))
    if family is not None:
        return family
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, _dt.datetime):
        return "date"
    if isinstance(value, ObjectId):
        return "objectid"
    raise Unsupported(f"$eq of a {type(value).__name__}")


def _eq(args) -> Callable:
    if not isinstance(args, list) or len(args) != 2:
        raise Unsupported("$eq takes two arguments")
    left, right = compile_expression(args[0]), compile_expression(args[1])
    if isinstance(args[1], str | bool | int | float) and not (isinstance(args[1], str) and args[1].startswith("$")):
        constant, family = args[1], _scalar(args[1])

        def eq_constant(doc, scope):  # the usual shape: a path against a literal
            a = left(doc, scope)
            if a is MISSING:
                raise Unsupported("$eq of a missing value")
            return a == constant and _scalar(a) == family
        return eq_constant

    def eq(doc, scope):
        a, b = left(doc, scope), right(doc, scope)
        if a is MISSING or b is MISSING:
            raise Unsupported("$eq of a missing value")
        # Values of different BSON types are never equal (true is not 1, null is not 0).
        return _scalar(a) == _scalar(b) and a == b
    return eq


def _array_elem_at(args) -> Callable:
    if not isinstance(args, list) or len(args) != 2:
        raise Unsupported("$arrayElemAt takes two arguments")
    array, index = compile_expression(args[0]), compile_expression(args[1])

    def elem_at(doc, scope):
        values, i = array(doc, scope), index(doc, scope)
        if values is MISSING or values is None:
            return None  # null for a null or missing array
        if not isinstance(values, _ARRAYS) or type(i) is not int:
            raise Unsupported("$arrayElemAt of a non-array or by a non-integer")
        if -len(values) <= i < len(values):
            return values[i]
        return MISSING  # past either end: the field is missing
    return elem_at


def _filter(spec) -> Callable:
    if not isinstance(spec, dict) or not {"input", "cond"} <= set(spec) <= {"input", "cond", "as"}:
        raise Unsupported("$filter")
    name = spec.get("as", "this")
    if not isinstance(name, str):
        raise Unsupported("$filter as")
    source, condition = compile_expression(spec["input"]), compile_expression(spec["cond"])
    cond = spec["cond"]
    if (isinstance(cond, dict) and list(cond) == ["$eq"] and isinstance(cond["$eq"], list) and len(cond["$eq"]) == 2
            and isinstance(cond["$eq"][0], str) and cond["$eq"][0].startswith(f"$${name}.")
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
            inner = dict(scope)  # the condition reads its variables and keeps none of them
            for value in values:
                inner[name] = value
                verdict = condition(doc, inner)
                if type(verdict) is not bool:
                    raise Unsupported("$filter condition that is not true or false")
                if verdict:
                    out.append(value)
            return out

    def filtered(doc, scope):
        values = source(doc, scope)
        if values is MISSING or values is None:
            return None
        if not isinstance(values, _ARRAYS):
            raise Unsupported("$filter of a non-array")
        return keep(values, doc, scope)
    return filtered


def _let(spec) -> Callable:
    if not isinstance(spec, dict) or set(spec) != {"vars", "in"} or not isinstance(spec["vars"], dict):
        raise Unsupported("$let")
    names = {name: compile_expression(expression) for name, expression in spec["vars"].items()}
    body = compile_expression(spec["in"])

    def let(doc, scope):
        inner = dict(scope)
        for name, value in names.items():
            inner[name] = value(doc, scope)  # a missing value stays missing where the body reads it
        return body(doc, inner)
    return let


def _index_of_array(args) -> Callable:
    if not isinstance(args, list) or len(args) != 2:
        raise Unsupported("$indexOfArray with a start or an end")
    array, search = compile_expression(args[0]), compile_expression(args[1])

    def index_of(doc, scope):
        values, wanted = array(doc, scope), search(doc, scope)
        if values is MISSING or values is None:
            return None  # null for a null or missing array
        if not isinstance(values, _ARRAYS) or wanted is MISSING:
            raise Unsupported("$indexOfArray of a non-array or of a missing value")
        family = _scalar(wanted)  # a document or an array searched for: not modelled
        for i, value in enumerate(values):
            if type(value) in (RawDocument, RawArray, dict, list):
                continue  # never equal to a scalar
            if value == wanted and _scalar(value) == family:
                return i
        return -1
    return index_of


_OPERATORS = {"$eq": _eq, "$arrayElemAt": _array_elem_at, "$filter": _filter, "$let": _let,
              "$indexOfArray": _index_of_array}


def compile_expression(expression) -> Callable:
    """A function (document, variables) -> value of an aggregation expression; Unsupported for
    one this module does not evaluate."""
    if isinstance(expression, str):
        if expression.startswith("$"):
            return _field(expression)
        return lambda doc, scope: expression
    if expression is None or isinstance(expression, bool | int | float):
        return lambda doc, scope: expression
    if isinstance(expression, dict) and len(expression) == 1:
        (operator, argument), = expression.items()
        if operator == "$literal":
            return lambda doc, scope: argument
        if operator in _OPERATORS:
            return _OPERATORS[operator](argument)
    raise Unsupported(f"expression {expression!r:.60}")


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
