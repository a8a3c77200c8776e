"""find's projections, the engine's own (MongoDB manual, "Project Fields to Return from Query" and
the projection operators `$slice`, `$elemMatch` and positional `$`).

A projection is parsed as a server parses it (its projection parser's rules and error codes):

- a field whose value is true (`1`, `true`, any non-zero number, a string, an array) is included;
  false (`0`, `false`, `null`) excluded; a projection is of one kind, `_id` aside: mixing is code
  31253 ("Cannot do inclusion on field f in exclusion projection") or 31254 (the reverse);
- a dotted path and a nested document (`{a: {b: 1}}` is `{"a.b": 1}`) project inside documents,
  and inside each document of an array; a path and a path below it collide (31249/31250);
- `{f: {$slice: n}}` or `{f: {$slice: [skip, limit]}}` cuts an array (not an array: sent as it
  is); alone, or beside exclusions, every other field stays (an exclusion projection); beside
  inclusions it is one of them. Malformed: 31272, 31257, 31258, 31259, 31273;
- `{f: {$elemMatch: <filter>}}` keeps the first element of the array that matches, or drops the
  field; alone it is an inclusion. Not on a dotted field (31275), the argument a document (31274);
- `f.$` keeps the element the query matched in the array `f` (the first element satisfying the
  query's conditions on `f`): only one (31276), never beside `$elemMatch` (31255/31256), and the
  query must have a condition on `f` (31277). No element matched: code 51246;
- `_id` is included unless excluded, in an inclusion projection;
- any other operator document is an aggregation expression (an inclusion), evaluated by the
  engine's expressions (docstore.query.expressions); `$meta` is refused (the engine has no text
  score), code 238 NotImplemented.

An aggregation's `$project` and `$unset` use the same parser (`expressions=True`): there every
value but a number, a boolean or null is an expression.

Included fields keep the document's order; computed ones follow in the projection's order.
Values are handed on, not copied: every caller gives a document of its own.
"""

from __future__ import annotations

from collections.abc import Mapping

from pymongo.errors import OperationFailure

from docstore.query.expressions import compile_expression
from docstore.query.match import filter_applies
from docstore.storage.cut import slice_bounds

_MISSING = object()


def _error(message: str, code: int) -> OperationFailure:
    name = {2: "BadValue", 238: "NotImplemented"}.get(code, f"Location{code}")
    return OperationFailure(message, code, {"ok": 0.0, "errmsg": message, "code": code, "codeName": name})


def _true(value) -> bool:
    """BSON's trueValue: false, null and zero are false; anything else is true."""
    if value is None or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0
    return True


class _Slice:
    __slots__ = ("spec",)

    def __init__(self, spec):
        self.spec = spec


class _ElemMatch:
    __slots__ = ("filter",)

    def __init__(self, spec):
        self.filter = spec


class _Positional:
    __slots__ = ()


class _Computed:
    __slots__ = ("function",)

    def __init__(self, function):
        self.function = function


class Projection:
    """A parsed projection: `inclusion` and the tree of what each path does."""

    __slots__ = ("tree", "inclusion", "positional")

    def __init__(self, tree: dict, inclusion: bool, positional: str | None):
        self.tree, self.inclusion, self.positional = tree, inclusion, positional


def _add(tree: dict, path: str, node) -> None:
    parts = path.split(".")
    for n, part in enumerate(parts[:-1]):
        child = tree.get(part)
        if child is None:
            child = tree[part] = {}
        elif not isinstance(child, dict):
            raise _error(f"Path collision at {path} remaining portion {'.'.join(parts[n + 1:])}", 31249)
        tree = child
    if parts[-1] in tree:
        raise _error(f"Path collision at {path}", 31250)
    tree[parts[-1]] = node


def _slice_spec(value):
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, list | tuple):
        if len(value) != 2:
            raise _error("$slice array argument should be of form [skip, limit]", 31272)
        skip, limit = value
        if isinstance(skip, bool) or not isinstance(skip, int | float):
            raise _error(f"$slice expects the skip argument to be a number, got {type(skip).__name__}", 31257)
        if isinstance(limit, bool) or not isinstance(limit, int | float):
            raise _error(f"$slice expects the limit argument to be a number, got {type(limit).__name__}", 31258)
        if int(limit) <= 0:
            raise _error(f"$slice limit must be positive, got {int(limit)}", 31259)
        return [int(skip), int(limit)]
    raise _error("$slice only supports numbers and [skip, limit] arrays", 31273)


def _flatten(spec: Mapping, prefix: str = ""):
    """(path, value) of a projection, nested documents of plain fields as dotted paths."""
    for key, value in spec.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and not str(next(iter(value))).startswith("$"):
            yield from _flatten(value, path + ".")
        else:
            yield path, value


def parse(spec: Mapping, query=None, *, expressions: bool = False) -> Projection:
    """The projection `spec` parsed, with the server's errors (the rules above). `expressions`:
    an aggregation's `$project`/`$unset`, where every operator document, string or other value
    that is not a number or a boolean is an expression (no `$slice`, `$elemMatch` or `.$` forms)."""
    tree: dict = {}
    kind = None  # True: inclusion, False: exclusion
    id_specified = has_slice = has_elem_match = False
    positional = None
    for path, value in _flatten(spec):
        id_specified |= path == "_id" or path.startswith("_id.")
        is_positional = path.endswith(".$") or ".$." in path or path == "$"
        if expressions and (isinstance(value, Mapping) or not (value is None or isinstance(value, bool | int | float))):
            if is_positional or any(p.startswith("$") for p in path.split(".")):
                raise _error(f"Invalid $project :: caused by :: FieldPath field names may not start with '$': {path}",
                             16410)
            if kind is False:
                raise _error("Invalid $project :: caused by :: Cannot use expression other than $meta in exclusion "
                             "projection", 31252)
            kind = True
            _add(tree, path, _Computed(compile_expression(value)))
        elif isinstance(value, Mapping):
            if is_positional:
                raise _error("positional projection cannot be used with an expression", 31271)
            first = next(iter(value), None)
            if first == "$slice":
                _add(tree, path, _Slice(_slice_spec(value["$slice"])))
                has_slice = True
            elif first == "$elemMatch":
                if not isinstance(value["$elemMatch"], Mapping):
                    raise _error("elemMatch: Invalid argument, object required, but got "
                                 f"{type(value['$elemMatch']).__name__}", 31274)
                if positional is not None:
                    raise _error("Cannot specify positional operator and $elemMatch.", 31255)
                if "." in path:
                    raise _error("Cannot use $elemMatch projection on a nested field.", 31275)
                _add(tree, path, _ElemMatch(value["$elemMatch"]))
                has_elem_match = True
            elif first == "$meta":
                raise _error("$meta is not implemented by the embedded engine (it has no text score)", 238)
            else:
                if kind is False:
                    raise _error("Cannot use expression other than $meta in exclusion projection", 31252)
                kind = True
                _add(tree, path, _Computed(compile_expression(value)))
        elif _true(value):
            if is_positional:
                if positional is not None:
                    raise _error("Cannot specify more than one positional projection per query.", 31276)
                if has_elem_match:
                    raise _error("Cannot specify positional operator and $elemMatch.", 31256)
                if path.endswith(".$.") or path.count("$") > 1 or not path.endswith(".$"):
                    raise _error(f"Cannot use positional operator twice: {path}", 31287)
                field = path[:-2]
                if not _queries(query, field.split(".")[0]):
                    raise _error(f"Positional projection '{path}' does not match the query document.", 31277)
                _add(tree, field, _Positional())
                positional = field
            else:
                _add(tree, path, True)
            if kind is False:
                raise _error(f"Cannot do inclusion on field {path} in exclusion projection", 31253)
            kind = True
        else:
            _add(tree, path, False)
            if path != "_id":
                if kind is True:
                    raise _error(f"Cannot do exclusion on field {path} in inclusion projection", 31254)
                kind = False
    if kind is None:
        kind = not has_slice and has_elem_match
    if not id_specified and kind:
        tree["_id"] = True
    return Projection(tree, kind, positional)


def _queries(query, field: str) -> bool:
    """Whether the query has a condition on `field` or below it (also inside `$and`/`$or`/`$nor`)."""
    if not isinstance(query, Mapping):
        return False
    for key, cond in query.items():
        if key in ("$and", "$or", "$nor") and isinstance(cond, list):
            if any(_queries(c, field) for c in cond):
                return True
        elif key.split(".")[0] == field:
            return True
    return False


def _sliced(value, spec):
    if not isinstance(value, list):
        return value  # the server sends a field that is not an array as it is
    bounds = slice_bounds(spec, len(value))
    return value[bounds[0]:bounds[1]]


def _first_match(value, spec):
    if not isinstance(value, list):
        return _MISSING
    for element in value:
        if filter_applies({"v": {"$elemMatch": spec}}, {"v": [element]}):
            return [element]
    return _MISSING


def _positional(value, query, field: str):
    from docstore.query.update import matched_position

    if not isinstance(value, list):
        return value
    position = matched_position(value, query, field)
    if position is None:
        raise _error("Executor error during find command :: caused by :: positional operator '.$' couldn't find "
                     "a matching element in the array", 51246)
    return [value[position]]


def _leaf(node, value, doc, query, path):
    """What a leaf of the tree makes of the value at its path (`_MISSING`: the field goes)."""
    if isinstance(node, _Slice):
        return _sliced(value, node.spec)
    if isinstance(node, _ElemMatch):
        return _first_match(value, node.filter)
    if isinstance(node, _Positional):
        return _positional(value, query, path)
    return value


def _include(doc: Mapping, tree: dict, root, query, prefix: str, out: dict) -> dict:
    for key, value in doc.items():
        node = tree.get(key)
        if node is None or node is False:
            continue
        if node is True:
            out[key] = value
        elif isinstance(node, dict):
            got = _include_value(value, node, root, query, f"{prefix}{key}.")
            if got is not _MISSING:
                out[key] = got
        elif not isinstance(node, _Computed):
            got = _leaf(node, value, root, query, prefix + key)
            if got is not _MISSING:
                out[key] = got
    for key, node in tree.items():  # computed fields, and documents made to hold them, in projection order
        if isinstance(node, _Computed):
            got = node.function(root, {})
            if got is not _MISSING:
                out[key] = got
        elif isinstance(node, dict) and _computes(node) and not isinstance(doc.get(key), Mapping | list):
            out[key] = _include({}, node, root, query, f"{prefix}{key}.", {})
    return out


def _computes(tree: dict) -> bool:
    return any(isinstance(n, _Computed) or (isinstance(n, dict) and _computes(n)) for n in tree.values())


def _include_value(value, tree, root, query, prefix):
    if isinstance(value, Mapping):
        return _include(value, tree, root, query, prefix, {})
    if isinstance(value, list):
        return [got for got in (_include_value(v, tree, root, query, prefix) for v in value) if got is not _MISSING]
    return _MISSING


def _exclude(doc: Mapping, tree: dict, query, prefix: str, out: dict) -> dict:
    for key, value in doc.items():
        node = tree.get(key)
        if node is None or node is True:
            out[key] = value
        elif node is False:
            continue
        elif isinstance(node, dict):
            out[key] = _exclude_value(value, node, query, f"{prefix}{key}.")
        else:
            got = _leaf(node, value, doc, query, prefix + key)
            if got is not _MISSING:
                out[key] = got
    return out


def _exclude_value(value, tree, query, prefix):
    if isinstance(value, Mapping):
        return _exclude(value, tree, query, prefix, {})
    if isinstance(value, list):
        return [_exclude_value(v, tree, query, prefix) for v in value]
    return value


def apply(doc: Mapping, projection: Projection, query=None) -> dict:
    """`doc` projected; the result is of `doc`'s own class (a document decoded for the reader keeps
    that mark, docstore.exec.executor.Aware)."""
    out = type(doc)() if isinstance(doc, dict) else {}
    if projection.inclusion:
        return _include(doc, projection.tree, doc, query, "", out)
    return _exclude(doc, projection.tree, query, "", out)
