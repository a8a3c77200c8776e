"""Update operators, written from MongoDB's manual ("Update Operators" and each operator's page).

`check(update, array_filters)` validates an update document before any document is read, and
`apply(doc, update, ...)` changes one document in place. The rules kept, each with the server's
error code (a `WriteError`, as a server's write error):

- an update document holds only operators, each with a document of paths (code 9
  FailedToParse: "Unknown modifier", "Modifiers operate on fields ..."); an empty path or an
  empty path component is code 56 EmptyFieldName; two operators naming one path or a path and
  its prefix is code 40 ConflictingUpdateOperators;
- fields are applied per operator in lexicographic order of their paths (5.0+);
- positional `$` updates the first array element the query matched: the query must have
  matched that array (code 2 BadValue, "The positional operator did not find the match needed
  from the query."), also for an array of scalars; `$[]` updates every element; `$[<id>]` the
  elements matching the array filter `<id>` (`arrayFilters`: an identifier not used is code 9,
  a path naming one not given is code 2); an array update on a value that is not an array is
  code 2; an upsert's insert cannot use them (code 2);
- a path through a scalar cannot be created (code 28 PathNotViable);
- `$inc`, `$mul` need numbers on both sides (code 14 TypeMismatch), with the server's type
  promotion (int32 → int64 on overflow, any double → double); `$min`/`$max` compare in BSON
  order; `$rename` needs a string target and no array element as source or target (code 2);
- `$push` takes a value or `$each` with `$slice`, `$sort`, `$position` (an unknown modifier, a
  non-array `$each` or target is code 2); `$addToSet` adds each value of `$each` once, also when
  `$each` repeats it; `$pop` takes 1 or -1 (code 9); `$pull` removes what equals its value or
  matches its condition (a document condition is a query on each element); `$pullAll` needs an
  array (code 2); `$bit` takes and/or/xor of integers (codes 9, 14);
- `$currentDate` sets the date (or a timestamp with `{$type: "timestamp"}`);
- `$setOnInsert` applies only when the update inserts.

Documents here are as the engine holds them (dates naive UTC).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from decimal import Decimal

import bson
from bson import Decimal128, Int64, Timestamp
from pymongo.errors import WriteError

from docstore.query.match import filter_applies
from docstore.storage import keys as K

FAILED_TO_PARSE, BAD_VALUE, TYPE_MISMATCH, PATH_NOT_VIABLE = 9, 2, 14, 28
EMPTY_FIELD_NAME, CONFLICTING_UPDATE_OPERATORS, DOLLAR_PREFIXED_FIELD_NAME = 56, 40, 52

OPERATORS = ("$currentDate", "$inc", "$min", "$max", "$mul", "$rename", "$set", "$setOnInsert", "$unset",
             "$addToSet", "$pop", "$pull", "$push", "$pullAll", "$bit")
_FILTER_ID = re.compile(r"^\$\[([a-z][A-Za-z0-9]*)?\]\Z")
_MISSING = object()


def error(message: str, code: int) -> WriteError:
    names = {FAILED_TO_PARSE: "FailedToParse", BAD_VALUE: "BadValue", TYPE_MISMATCH: "TypeMismatch",
             PATH_NOT_VIABLE: "PathNotViable", EMPTY_FIELD_NAME: "EmptyFieldName",
             CONFLICTING_UPDATE_OPERATORS: "ConflictingUpdateOperators",
             DOLLAR_PREFIXED_FIELD_NAME: "DollarPrefixedFieldName", 66: "ImmutableField"}
    return WriteError(message, code, {"index": 0, "code": code, "codeName": names.get(code, ""), "errmsg": message})


def _type_name(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Int64):
        return "long"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def _is_number(value) -> bool:
    return isinstance(value, int | float | Decimal128) and not isinstance(value, bool)


# --- validation ----------------------------------------------------------------------------------


def _filter_identifiers(array_filters) -> dict:
    """{identifier: filter} of the arrayFilters (each filter's top-level fields share one identifier)."""
    out = {}
    for spec in array_filters or []:
        if not isinstance(spec, Mapping) or not spec:
            raise error("Cannot use an expression without a top-level field name in arrayFilters", FAILED_TO_PARSE)
        names = set()
        for key in spec:
            if key in ("$and", "$or", "$nor"):
                for clause in spec[key]:
                    names |= {k.split(".")[0] for k in clause}
            else:
                names.add(key.split(".")[0])
        if len(names) != 1:
            raise error("Error parsing array filter :: caused by :: Expected a single top-level field name, found "
                        f"'{sorted(names)[0]}' and '{sorted(names)[-1]}'", FAILED_TO_PARSE)
        (name,) = names
        if not re.match(r"^[a-z][A-Za-z0-9]*\Z", name):
            raise error(f"Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric "
                        f"string beginning with a lowercase letter, found '{name}'", BAD_VALUE)
        if name in out:
            raise error(f"Found multiple array filters with the same top-level field name {name}", FAILED_TO_PARSE)
        out[name] = spec
    return out


def _paths(update) -> list[str]:
    out = []
    for operator, fields in update.items():
        out.extend(fields)
        if operator == "$rename":
            out.extend(v for v in fields.values() if isinstance(v, str))
    return out


def check(update, array_filters=None) -> None:
    """Raise the server's error for an update document it would refuse (before reading any document)."""
    if not isinstance(update, Mapping) or not update:
        raise error("Update document requires atomic operators", FAILED_TO_PARSE)
    for operator, fields in update.items():
        if operator not in OPERATORS:
            raise error(f"Unknown modifier: {operator}. Expected a valid update modifier or pipeline-style update "
                        "specified as an array", FAILED_TO_PARSE)
        if not isinstance(fields, Mapping):
            raise error(f"Modifiers operate on fields but we found type {_type_name(fields)} instead. For example: "
                        f"{{$mod: {{<field>: ...}}}} not {{{operator}: {fields!r}}}", FAILED_TO_PARSE)
        for path in fields:
            _check_path(path, operator)
        if operator == "$rename":
            for source, target in fields.items():
                if not isinstance(target, str):
                    raise error(f"The 'to' field for $rename must be a string: {source}: {target!r}", BAD_VALUE)
                _check_path(target, operator)
                for p in (source, target):
                    if any(_FILTER_ID.match(part) or part == "$" for part in p.split(".")):
                        raise error(f"The source field for $rename may not be dynamic: {p}", BAD_VALUE)
        if operator == "$pop":
            for value in fields.values():
                if not _is_number(value) or float(str(value) if isinstance(value, Decimal128) else value) not in (1, -1):
                    raise error(f"$pop expects 1 or -1, found: {value!r}", FAILED_TO_PARSE)
        if operator in ("$inc", "$mul"):
            for path, value in fields.items():
                if not _is_number(value):
                    verb = "increment" if operator == "$inc" else "multiply"
                    raise error(f"Cannot {verb} with non-numeric argument: {{{path}: {value!r}}}", TYPE_MISMATCH)
        if operator == "$pullAll":
            for value in fields.values():
                if not isinstance(value, list):
                    raise error(f"$pullAll requires an array argument but was given a {_type_name(value)}", BAD_VALUE)
        if operator == "$currentDate":
            for value in fields.values():
                if not (isinstance(value, bool) or (isinstance(value, Mapping) and set(value) == {"$type"} and
                                                    value["$type"] in ("date", "timestamp"))):
                    raise error(f"{value!r} is not valid type for $currentDate. Please use a boolean ('true') or a "
                                "$type expression ({$type: 'timestamp/date'}).", BAD_VALUE)
        if operator == "$bit":
            for value in fields.values():
                if not isinstance(value, Mapping) or not value:
                    raise error(f"The $bit modifier is not compatible with a {_type_name(value)}. You must pass in an "
                                "embedded document: {$bit: {field: {and/or/xor: #}}", BAD_VALUE)
                for op, operand in value.items():
                    if op not in ("and", "or", "xor"):
                        raise error(f"The $bit modifier only supports 'and', 'or', and 'xor', not '{op}' which is an "
                                    "unknown operator: {" + f"{op}: {operand!r}" + "}", BAD_VALUE)
                    if not isinstance(operand, int) or isinstance(operand, bool):
                        raise error(f"The $bit modifier field must be an Integer(32/64 bit); a '{_type_name(operand)}' "
                                    f"is not supported here: {{{op}: {operand!r}}}", BAD_VALUE)
        if operator in ("$push", "$addToSet"):
            for value in fields.values():
                _check_each(operator, value)
    paths = sorted(_paths(update))
    for a, b in zip(paths, paths[1:], strict=False):
        if a == b or b.startswith(a + "."):
            raise error(f"Updating the path '{b}' would create a conflict at '{a}'", CONFLICTING_UPDATE_OPERATORS)
    identifiers = _filter_identifiers(array_filters)
    used = set()
    for path in paths:
        for part in path.split("."):
            m = _FILTER_ID.match(part)
            if m and m.group(1):
                if m.group(1) not in identifiers:
                    raise error(f"No array filter found for identifier '{m.group(1)}' in path '{path}'", BAD_VALUE)
                used.add(m.group(1))
    for name in identifiers:
        if name not in used:
            raise error(f"The array filter for identifier '{name}' was not used in the update {dict(update)}",
                        FAILED_TO_PARSE)


def _check_path(path, operator) -> None:
    if not isinstance(path, str) or path == "":
        raise error("An empty update path is not valid.", EMPTY_FIELD_NAME)
    parts = path.split(".")
    for n, part in enumerate(parts):
        if part == "":
            raise error(f"The update path '{path}' contains an empty field name, which is not allowed.",
                        EMPTY_FIELD_NAME)
        if part.startswith("$") and part != "$" and not _FILTER_ID.match(part):
            raise error(f"The dollar ($) prefixed field '{part}' in '{path}' is not allowed in the context of an update's "
                        "replacement document. Consider using an aggregation pipeline with $replaceWith.",
                        DOLLAR_PREFIXED_FIELD_NAME)
        if part == "$" and n == 0:
            raise error(f"Cannot have positional (i.e. '$') element in the first position in path '{path}'", BAD_VALUE)
    if parts.count("$") > 1:
        raise error(f"Too many positional (i.e. '$') elements found in path '{path}'", BAD_VALUE)


def _check_each(operator, value) -> None:
    if not (isinstance(value, Mapping) and value and next(iter(value)) == "$each") and \
            not (isinstance(value, Mapping) and "$each" in value):
        return
    if not isinstance(value["$each"], list):
        name = "$push" if operator == "$push" else "$addToSet"
        raise error(f"The argument to $each in {name} must be an array but it was of type: "
                    f"{_type_name(value['$each'])}", BAD_VALUE)
    allowed = {"$each", "$slice", "$sort", "$position"} if operator == "$push" else {"$each"}
    for key in value:
        if key not in allowed:
            if operator == "$addToSet":
                raise error(f"Found unexpected fields after $each in $addToSet: {dict(value)}", BAD_VALUE)
            raise error(f"Unrecognized clause in $push: {key}", BAD_VALUE)
    if "$slice" in value and not (isinstance(value["$slice"], int) and not isinstance(value["$slice"], bool)):
        raise error(f"The value for $slice must be an integer value but was given type: "
                    f"{_type_name(value['$slice'])}", BAD_VALUE)
    if "$position" in value and not (isinstance(value["$position"], int) and not isinstance(value["$position"], bool)):
        raise error(f"The value for $position must be an integer value, not of type: "
                    f"{_type_name(value['$position'])}", BAD_VALUE)
    if "$sort" in value:
        spec = value["$sort"]
        if isinstance(spec, Mapping):
            if not spec or any(d not in (1, -1) or isinstance(d, bool) for d in spec.values()):
                raise error("The $sort element value must be either 1 or -1", BAD_VALUE)
        elif spec not in (1, -1) or isinstance(spec, bool):
            raise error("The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded "
                        "fields", BAD_VALUE)


# --- positions -----------------------------------------------------------------------------------


def _conditions(query, prefix: str) -> list[tuple[str, object]]:
    """The query's conditions on `prefix` or below it: (the rest of the path, the condition)."""
    out = []
    for key, cond in (query or {}).items():
        if key == "$and":
            for clause in cond:
                out.extend(_conditions(clause, prefix))
        elif key.startswith("$"):
            continue
        elif key == prefix:
            out.append(("", cond))
        elif key.startswith(prefix + "."):
            out.append((key[len(prefix) + 1:], cond))
    return out


def _element_matches(element, rest: str, cond) -> bool:
    if rest == "":
        if isinstance(cond, Mapping) and set(cond) == {"$elemMatch"}:
            inner = cond["$elemMatch"]
            if isinstance(inner, Mapping) and inner and all(str(k).startswith("$") for k in inner):
                return filter_applies({"v": inner}, {"v": element})
            return isinstance(element, Mapping) and filter_applies(inner, element)
        return filter_applies({"v": cond}, {"v": element})
    return filter_applies({rest: cond}, element) if isinstance(element, Mapping | list) else False


def matched_position(array: list, query, prefix: str) -> int | None:
    """The element of the array at `prefix` the query matched (what positional `$` stands for, in an
    update and in a projection): the first one satisfying the query's conditions on the array."""
    conditions = _conditions(query, prefix)
    if conditions:
        for n, element in enumerate(array):
            if all(_element_matches(element, rest, cond) for rest, cond in conditions):
                return n
    return None


def _positional_index(array: list, query, prefix: str, path: str) -> int:
    position = matched_position(array, query, prefix)
    if position is None:
        raise error("The positional operator did not find the match needed from the query.", BAD_VALUE)
    return position


def _element_in_filter(element, name: str, spec) -> bool:
    return filter_applies(spec, {name: element})


def expand(doc, path: str, *, query, filters: dict, is_insert: bool, positions: dict | None = None) -> list[list]:
    """The concrete paths (lists of keys and indexes) a path with `$`, `$[]` and `$[<id>]` stands for."""
    parts = path.split(".")
    if not any(p == "$" or _FILTER_ID.match(p) for p in parts):
        return [parts]
    if is_insert:
        if "$" in parts:
            raise error("The positional operator did not find the match needed from the query.", BAD_VALUE)
        head = ".".join(parts[:next(n for n, p in enumerate(parts) if _FILTER_ID.match(p))])
        raise error(f"The path '{head}' must exist in the document in order to apply array updates.", BAD_VALUE)
    out = []

    def walk(value, n: int, done: list):
        if n == len(parts):
            out.append(done)
            return
        part = parts[n]
        if part == "$" or _FILTER_ID.match(part):
            if not isinstance(value, list):
                where = ".".join(str(p) for p in done)
                if value is _MISSING:
                    raise error(f"The path '{where}' must exist in the document in order to apply array updates.",
                                BAD_VALUE)
                raise error(f"Cannot apply array updates to non-array element {where}: {value!r}", BAD_VALUE)
            if part == "$":
                prefix = ".".join(str(p) for p in done)
                known = (positions or {}).get(prefix)
                indexes = [known if known is not None else _positional_index(value, query, prefix, path)]
            elif part == "$[]":
                indexes = range(len(value))
            else:
                name = _FILTER_ID.match(part).group(1)
                indexes = [i for i, element in enumerate(value) if _element_in_filter(element, name, filters[name])]
            for i in indexes:
                walk(value[i], n + 1, done + [i])
            return
        if isinstance(value, Mapping):
            walk(value.get(part, _MISSING), n + 1, done + [part])
        elif isinstance(value, list) and part.isdigit():
            i = int(part)
            walk(value[i] if i < len(value) else _MISSING, n + 1, done + [i])
        else:
            walk(_MISSING, n + 1, done + [part])

    walk(doc, 0, [])
    return out


# --- navigation ----------------------------------------------------------------------------------


def _show(parts) -> str:
    return ".".join(str(p) for p in parts)


def _get(doc, parts):
    value = doc
    for part in parts:
        if isinstance(value, Mapping):
            value = value.get(part, _MISSING) if isinstance(part, str) else _MISSING
        elif isinstance(value, list):
            i = part if isinstance(part, int) else (int(part) if str(part).isdigit() else None)
            value = value[i] if i is not None and i < len(value) else _MISSING
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def _parent(doc, parts, *, create: bool):
    """(the container holding the last part, that part as a key or index), creating documents on the
    way when `create`; None when a part is missing and not created."""
    value = doc
    for n, part in enumerate(parts[:-1]):
        if isinstance(value, Mapping):
            key = str(part)
            if key not in value:
                if not create:
                    return None
                value[key] = {}
            value = value[key]
        elif isinstance(value, list):
            if not str(part).isdigit():
                if not create:
                    return None
                raise error(f"Cannot create field '{part}' in element {{{_show(parts[:n]) or 'root'}: "
                            f"{value!r}}}", PATH_NOT_VIABLE)
            i = int(part)
            if i >= len(value):
                if not create:
                    return None
                value.extend([None] * (i + 1 - len(value)))  # server: padded with nulls, the new one a document
                value[i] = {}
            value = value[i]
        else:
            if not create:
                return None
            raise error(f"Cannot create field '{part}' in element {{{_show(parts[:n])}: {value!r}}}", PATH_NOT_VIABLE)
    last = parts[-1]
    if isinstance(value, Mapping):
        return value, str(last)
    if isinstance(value, list):
        if not str(last).isdigit():
            if not create:
                return None
            raise error(f"Cannot create field '{last}' in element {{{_show(parts[:-1])}: {value!r}}}", PATH_NOT_VIABLE)
        i = int(last)
        if i >= len(value):
            if not create:
                return None
            value.extend([None] * (i + 1 - len(value)))
        return value, i
    if not create:
        return None
    raise error(f"Cannot create field '{last}' in element {{{_show(parts[:-1])}: {value!r}}}", PATH_NOT_VIABLE)


def _set(doc, parts, value) -> None:
    container, key = _parent(doc, parts, create=True)
    container[key] = value


# --- arithmetic ----------------------------------------------------------------------------------


def _arith(operator: str, current, operand, path: str, doc_id):
    if current is _MISSING:
        if operator == "$inc":
            return operand
        return type(operand)(0) if not isinstance(operand, Decimal128) else Decimal128("0")
    if not _is_number(current):
        raise error(f"Cannot apply {operator} to a value of non-numeric type. {{_id: {doc_id!r}}} has the field "
                    f"'{path.split('.')[-1]}' of non-numeric type {_type_name(current)}", TYPE_MISMATCH)
    if isinstance(current, Decimal128) or isinstance(operand, Decimal128):
        a, b = (v.to_decimal() if isinstance(v, Decimal128) else Decimal(repr(v)) for v in (current, operand))
        return Decimal128(a + b if operator == "$inc" else a * b)
    result = current + operand if operator == "$inc" else current * operand
    if isinstance(current, float) or isinstance(operand, float):
        return float(result)
    if isinstance(current, Int64) or isinstance(operand, Int64) or not -2**31 <= result < 2**31:
        if not -2**63 <= result < 2**63:
            raise error(f"Failed to apply {operator} operations to current value ({current!r}) for document "
                        f"{{_id: {doc_id!r}}}", 15)  # Overflow
        return Int64(result)
    return int(result)


def _bit(current, ops: Mapping, path: str, doc_id):
    if current is _MISSING:
        current = 0
    if not isinstance(current, int) or isinstance(current, bool):
        raise error(f"Cannot apply $bit to a value of non-integral type.{{_id: {doc_id!r}}} has the field "
                    f"{path.split('.')[-1]} of non-integer type {_type_name(current)}", TYPE_MISMATCH)
    result = int(current)
    wide = isinstance(current, Int64)
    for op, operand in ops.items():
        wide = wide or isinstance(operand, Int64)
        result = result & operand if op == "and" else result | operand if op == "or" else result ^ operand
    return Int64(result) if wide else result


def _same(a, b) -> bool:
    return K.encode(a) == K.encode(b)


def unchanged(old: Mapping, new: Mapping) -> bool:
    """Whether an update left a document as it was, as a server decides it (nModified 0, no write,
    no change event): the same fields in the same order, each value of the same BSON type and
    bytes. Python's == is not enough: 1, 1.0 and True are equal to it, and a `$set` from one of
    them to another changes the stored type on a server."""
    if new != old or list(new) != list(old):
        return False
    return bson.encode(old) == bson.encode(new)


def _sort_each(values: list, spec) -> list:
    if isinstance(spec, Mapping):
        sort = list(spec.items())
        return sorted(values, key=lambda v: K.document_sort_key(v if isinstance(v, Mapping) else {}, sort))
    return sorted(values, key=K.encode, reverse=spec == -1)


def _pull_matches(element, cond) -> bool:
    if isinstance(cond, Mapping):
        if cond and all(str(k).startswith("$") for k in cond):
            return filter_applies({"v": cond}, {"v": element})
        return isinstance(element, Mapping) and filter_applies(cond, element)
    return _same(element, cond)


# --- apply ---------------------------------------------------------------------------------------


def _field_order(path: str):
    """5.0+: fields in lexicographic order, numeric names in numeric order."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in path.split(".")]


def apply(doc: dict, update: Mapping, *, query=None, array_filters=None, is_insert: bool = False,
          now: _dt.datetime | None = None) -> dict:
    """`doc` changed in place by the update document `update` (already `check`ed); returned."""
    filters = _filter_identifiers(array_filters)
    doc_id = doc.get("_id")
    now = now or _dt.datetime.now(_dt.UTC).replace(tzinfo=None)
    now = now.replace(microsecond=now.microsecond // 1000 * 1000)  # BSON dates: milliseconds
    # `$` is the element the query matched, in the document as it was before this update: found once,
    # before any field changes (a field set first must not move it).
    positions = {}
    if not is_insert:
        for fields in update.values():
            for path in fields:
                parts = path.split(".")
                if "$" in parts:
                    prefix = parts[:parts.index("$")]
                    array = _get(doc, prefix)
                    if isinstance(array, list) and ".".join(prefix) not in positions:
                        positions[".".join(prefix)] = _positional_index(array, query, ".".join(prefix), path)
    for operator, fields in update.items():
        if operator == "$setOnInsert" and not is_insert:
            continue
        for path in sorted(fields, key=_field_order):
            value = fields[path]
            if operator == "$rename":
                _rename(doc, path, value)
                continue
            for parts in expand(doc, path, query=query, filters=filters, is_insert=is_insert, positions=positions):
                _apply_one(doc, operator, parts, value, path, doc_id, now)
    return doc


def _rename(doc, source: str, target: str) -> None:
    src, dst = source.split("."), target.split(".")
    for parts, name in ((src, "source"), (dst, "destination")):
        probe = doc
        for part in parts[:-1]:
            probe = probe.get(part, _MISSING) if isinstance(probe, Mapping) else _MISSING
            if isinstance(probe, list):
                raise error(f"The {name} field cannot be an array element, '{'.'.join(parts)}' in doc with "
                            f"_id: {doc.get('_id')!r} has an array field called '{part}'", BAD_VALUE)
    found = _parent(doc, src, create=False)
    if found is None or found[1] not in found[0]:
        return
    container, key = found
    value = container.pop(key)
    _set(doc, dst, value)


def _apply_one(doc, operator, parts, value, path, doc_id, now) -> None:
    if operator in ("$set", "$setOnInsert"):
        _set(doc, parts, value)
        return
    if operator == "$unset":
        found = _parent(doc, parts, create=False)
        if found is None:
            return
        container, key = found
        if isinstance(container, list):
            if key < len(container):
                container[key] = None
        else:
            container.pop(key, None)
        return
    current = _get(doc, parts)
    if operator in ("$inc", "$mul"):
        _set(doc, parts, _arith(operator, current, value, path, doc_id))
    elif operator in ("$min", "$max"):
        if current is _MISSING or (K.encode(value) < K.encode(current) if operator == "$min"
                                   else K.encode(value) > K.encode(current)):
            _set(doc, parts, value)
    elif operator == "$currentDate":
        stamp = Timestamp(int(now.replace(tzinfo=_dt.UTC).timestamp()), 1) \
            if isinstance(value, Mapping) and value["$type"] == "timestamp" else now
        _set(doc, parts, stamp)
    elif operator == "$bit":
        _set(doc, parts, _bit(current, value, path, doc_id))
    elif operator in ("$push", "$addToSet"):
        if current is not _MISSING and not isinstance(current, list):
            raise error(f"The field '{parts[-1]}' must be an array but is of type {_type_name(current)} in document "
                        f"{{_id: {doc_id!r}}}", BAD_VALUE)
        array = list(current) if current is not _MISSING else []
        modifiers = isinstance(value, Mapping) and "$each" in value
        values = list(value["$each"]) if modifiers else [value]
        if operator == "$addToSet":
            for v in values:  # each value once, also when $each repeats it
                if not any(_same(v, e) for e in array):
                    array.append(v)
        else:
            position = value.get("$position") if modifiers else None
            if position is None:
                array.extend(values)
            else:
                at = position if position >= 0 else max(0, len(array) + position)
                array[at:at] = values
            if modifiers and "$sort" in value:
                array = _sort_each(array, value["$sort"])
            if modifiers and "$slice" in value:
                n = value["$slice"]
                array = array[:n] if n >= 0 else array[len(array) + n:] if -n < len(array) else array
        _set(doc, parts, array)
    elif operator == "$pop":
        if current is _MISSING:
            return
        if not isinstance(current, list):
            raise error(f"Path '{path}' contains an element of non-array type '{_type_name(current)}'", TYPE_MISMATCH)
        if current:
            _set(doc, parts, current[1:] if float(str(value)) == -1 else current[:-1])
    elif operator in ("$pull", "$pullAll"):
        if current is _MISSING:
            return
        if not isinstance(current, list):
            raise error("Cannot apply $pull to a non-array value", BAD_VALUE)
        if operator == "$pull":
            kept = [e for e in current if not _pull_matches(e, value)]
        else:
            kept = [e for e in current if not any(_same(e, v) for v in value)]
        if len(kept) != len(current):
            _set(doc, parts, kept)


def modified_paths(update) -> list[str] | None:
    """The paths an update (operators or a pipeline) may modify; None when it may modify any
    (a pipeline stage that replaces the root, or one not read here)."""
    if not isinstance(update, list):
        return _paths(update) if isinstance(update, Mapping) else None
    paths = []
    for stage in update:
        if not isinstance(stage, Mapping) or len(stage) != 1:
            return None
        name, spec = next(iter(stage.items()))
        if name in ("$set", "$addFields") and isinstance(spec, Mapping):
            paths.extend(spec)
        elif name == "$unset":
            paths.extend([spec] if isinstance(spec, str) else list(spec or []))
        else:
            return None
    return paths


# --- upserts -------------------------------------------------------------------------------------


def equalities(query) -> dict:
    """The equality clauses of a query (top-level, `$eq`, and inside `$and`), by path: what an upsert's
    inserted document starts from (manual: "the update creates a base document from the equality
    clauses in the <query> parameter")."""
    out = {}
    for key, cond in (query or {}).items():
        if key == "$and" and isinstance(cond, list):
            for clause in cond:
                if isinstance(clause, Mapping):
                    out.update(equalities(clause))
        elif key.startswith("$"):
            continue
        elif isinstance(cond, Mapping) and cond and any(str(k).startswith("$") for k in cond):
            if "$eq" in cond:
                out[key] = cond["$eq"]
        else:
            out[key] = cond
    return out


def seed(query) -> dict:
    """The base document of an upsert: the query's equality clauses, dotted paths expanded."""
    doc: dict = {}
    for path, value in sorted(equalities(query).items(), key=lambda kv: kv[0].count(".")):
        parts = path.split(".")
        if any(p.startswith("$") for p in parts):
            continue
        target = doc
        ok = True
        for part in parts[:-1]:
            nxt = target.setdefault(part, {})
            if not isinstance(nxt, dict):
                ok = False
                break
            target = nxt
        if ok:
            target[parts[-1]] = value
    return doc


# Operators `in_place` lets through on top-level fields: each reads and writes only the field it names.
_FIELD_OPERATORS = frozenset({"$set", "$inc", "$unset", "$min", "$max", "$mul", "$currentDate", "$setOnInsert"})


def in_place(update) -> tuple[dict[tuple[str, ...], list], dict, frozenset, dict[tuple[str, ...], str]] | None:
    """An update (already `check`ed) split for writing into the stored bytes (docstore.storage.splice):
    (the values each `$push` appends, by its path's names; the other operators, on top-level
    fields only; the top-level fields those change; the field each `$push` with `$sort: {field: 1}`
    sorts its top-level array on, by path), or None for an update that needs the whole document: a
    pipeline, `$push` with `$slice`/`$position` or another `$sort`, a positional or array-filter
    path, a dotted path outside `$push`, any other operator, or one `$push` path under another.
    A `$sort` is an append (or an insert) only when the array is already in that order and the new
    elements come after its last (or all between two neighbours): the caller checks that on the
    stored array before it splices."""
    if not isinstance(update, Mapping) or not update:
        return None
    appends: dict[tuple[str, ...], list] = {}
    sorts: dict[tuple[str, ...], str] = {}
    others: dict = {}
    fields: set[str] = set()
    for operator, spec in update.items():
        if operator == "$push":
            for path, value in spec.items():
                parts = tuple(path.split("."))
                if any(part.startswith("$") for part in parts):
                    return None
                if isinstance(value, Mapping) and "$each" in value:
                    if set(value) - {"$each", "$sort"}:
                        return None
                    if "$sort" in value:
                        order = value["$sort"]
                        if len(parts) != 1 or not isinstance(order, Mapping) or len(order) != 1:
                            return None
                        (field, direction), = order.items()
                        if direction != 1 or type(direction) is not int or "." in field:
                            return None
                        sorts[parts] = field
                    values = list(value["$each"])
                else:
                    values = [value]
                appends[parts] = values
        elif operator in _FIELD_OPERATORS:
            if any("." in path or path.startswith("$") or path == "_id" for path in spec):
                return None
            others[operator] = spec
            fields.update(spec)
        else:
            return None
    pushed = {parts[0] for parts in appends}
    if pushed & fields or len(pushed) != len(appends):
        return None  # one top-level field named twice: the general path says what that means
    return appends, others, frozenset(fields), sorts
