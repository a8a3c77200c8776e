"""Aggregation stages and expressions the engine evaluates itself before the rest of a pipeline
runs (MongoDB manual, "Aggregation Stages" and "Aggregation Operators"):

- `$replaceWith: <expr>` (4.2+) is `$replaceRoot: {newRoot: <expr>}`;
- `$setField: {field, input, value}` (5.0+) is the document `input` with the field named
  `field` (a string, possibly with dots or a leading `$`, taken literally) set to `value`, or
  removed when `value` is `$$REMOVE`; `$unsetField: {field, input}` is `$setField` with
  `$$REMOVE`. Its operands here are constants, `{$literal: ...}`, `$$ROOT`/`$$CURRENT`,
  `$field.paths` and nested `$setField`/`$unsetField`/`$getField`; another expression in them is
  refused with code 238 NotImplemented. `field` that is not a string is code 4161106 and
  `input` that is not a document (nor null) is code 4161105, as from a server.

A stage holding `$setField` is evaluated one document at a time (its operands depend on the
document) and handed on with the result as a `$literal`.
"""

from __future__ import annotations

from collections.abc import Mapping

from pymongo.errors import OperationFailure

_FIELD_OPS = ("$setField", "$unsetField", "$getField")
_PER_DOCUMENT = ("$set", "$addFields", "$project", "$replaceRoot", "$replaceWith")
_MISSING = object()


def _refuse(message: str, code: int = 238) -> OperationFailure:
    name = "NotImplemented" if code == 238 else f"Location{code}"
    return OperationFailure(message, code, {"ok": 0.0, "errmsg": message, "code": code, "codeName": name})


# Stages an update pipeline may hold (manual: "Updates with Aggregation Pipeline").
UPDATE_STAGES = ("$addFields", "$set", "$project", "$unset", "$replaceRoot", "$replaceWith")


def check_update_pipeline(pipeline: list) -> None:
    for stage in pipeline:
        if not isinstance(stage, Mapping) or len(stage) != 1:
            raise _refuse("A pipeline stage specification object must contain exactly one field.", 40323)
        name = next(iter(stage))
        if name not in UPDATE_STAGES:
            msg = f"{name} is not allowed to be used within an update"
            raise OperationFailure(msg, 72, {"ok": 0.0, "errmsg": msg, "code": 72, "codeName": "InvalidOptions"})


def normalize(stage: Mapping) -> Mapping:
    if set(stage) == {"$replaceWith"}:
        return {"$replaceRoot": {"newRoot": stage["$replaceWith"]}}
    return stage


def has_field_ops(value) -> bool:
    if isinstance(value, Mapping):
        return any(k in _FIELD_OPS or has_field_ops(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_field_ops(v) for v in value)
    return False


def _path(doc, path: str):
    value = doc
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _evaluate(expr, doc):
    if isinstance(expr, str):
        if expr in ("$$ROOT", "$$CURRENT"):
            return doc
        if expr == "$$REMOVE":
            return _MISSING
        if expr.startswith("$$"):
            raise _refuse(f"the variable {expr} in $setField is not implemented by the embedded engine")
        if expr.startswith("$"):
            return _path(doc, expr[1:])
        return expr
    if isinstance(expr, Mapping):
        if len(expr) == 1:
            (op, arg), = expr.items()
            if op == "$literal":
                return arg
            if op in _FIELD_OPS:
                return _field_op(op, arg, doc)
            if op.startswith("$"):
                raise _refuse(f"{op} inside $setField is not implemented by the embedded engine")
        return {k: v for k, v in ((k, _evaluate(v, doc)) for k, v in expr.items()) if v is not _MISSING}
    if isinstance(expr, list):
        return [None if v is _MISSING else v for v in (_evaluate(v, doc) for v in expr)]
    return expr


def _field_op(op: str, arg, doc):
    if not isinstance(arg, Mapping):
        if op == "$getField":
            arg = {"field": arg, "input": "$$CURRENT"}
        else:
            raise _refuse(f"{op} only supports an object as its argument", 4161100)
    field = _evaluate(arg.get("field"), doc)
    if not isinstance(field, str):
        raise _refuse(f"{op} requires 'field' to evaluate to type String", 4161106)
    source = _evaluate(arg.get("input", "$$CURRENT"), doc)
    if op == "$getField":
        return source.get(field, _MISSING) if isinstance(source, Mapping) else _MISSING
    if source is None or source is _MISSING:
        return None
    if not isinstance(source, Mapping):
        raise _refuse(f"{op} requires 'input' to evaluate to type Object", 4161105)
    value = _MISSING if op == "$unsetField" else _evaluate(arg.get("value"), doc)
    out = {k: v for k, v in source.items() if k != field}
    if value is not _MISSING:
        out = dict(source)
        out[field] = value
    return out


def _bind(value, doc):
    """`value` with each `$setField`/`$unsetField`/`$getField` replaced by its `$literal` result."""
    if isinstance(value, Mapping):
        if len(value) == 1 and next(iter(value)) in _FIELD_OPS:
            result = _evaluate(value, doc)
            return "$$REMOVE" if result is _MISSING else {"$literal": result}
        return {k: _bind(v, doc) for k, v in value.items()}
    if isinstance(value, list):
        return [_bind(v, doc) for v in value]
    return value


def for_document(stage: Mapping, doc) -> Mapping:
    """The stage (normalized) as it applies to `doc`: its field operators evaluated."""
    stage = normalize(stage)
    if not has_field_ops(stage):
        return stage
    name = next(iter(stage))
    if name not in _PER_DOCUMENT:
        raise _refuse(f"$setField in a {name} stage is not implemented by the embedded engine")
    return {name: _bind(stage[name], doc)}
