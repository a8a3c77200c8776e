"""Aggregation stages, the engine's own (MongoDB manual, "Aggregation Stages"): a pipeline is
compiled stage by stage, each spec checked as a server parses it (so a malformed stage fails
even when no document reaches it), into functions from a list of documents to a list.

Stages: `$match`, `$project`, `$addFields`/`$set`, `$unset`, `$replaceRoot`/`$replaceWith`,
`$sort`, `$skip`, `$limit`, `$group` (accumulators `$sum $avg $min $max $first $last $push
$addToSet $count`), `$unwind`, `$lookup` (equality, and the `let`/`pipeline` form), `$count`,
`$facet`, `$sortByCount`, `$out`; `$merge` is docstore.query.merge's, run by the caller.
A stage holding `$setField`/`$unsetField`/`$getField` is evaluated one document at a time
(docstore.query.stages). An unknown stage is code 40324 "Unrecognized pipeline stage name";
a stage the server has and the engine does not implement is code 238 NotImplemented; an
unknown accumulator is code 15952; an unknown expression operator code 168
(docstore.query.expressions).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pymongo.errors import OperationFailure

from docstore.query import projection as PR
from docstore.query import stages as ST
from docstore.query import variables as V
from docstore.query.expressions import Unsupported, compile_expression, compile_project, failure
from docstore.query.match import check, filter_applies
from docstore.query.types import compare, equal
from docstore.storage import keys as K
from docstore.storage.raw import MISSING, RawDocument

_NOT_IMPLEMENTED = ("$bucket", "$bucketAuto", "$graphLookup", "$sample", "$redact", "$geoNear", "$densify", "$fill",
                    "$setWindowFields", "$unionWith", "$collStats", "$indexStats", "$planCacheStats", "$search",
                    "$searchMeta", "$vectorSearch", "$changeStream", "$currentOp", "$listSessions",
                    "$listLocalSessions", "$listSearchIndexes", "$shardedDataDistribution", "$documents")


def _not_implemented(name: str) -> OperationFailure:
    msg = f"the {name} stage is not implemented by the embedded engine"
    return OperationFailure(msg, 238, {"ok": 0.0, "errmsg": msg, "code": 238, "codeName": "NotImplemented"})


def _one_document(docs: list) -> list:
    return [d.decode() if type(d) is RawDocument else d for d in docs]


# --- stages ---------------------------------------------------------------------------------------


def _match(spec, database) -> Callable:
    if not isinstance(spec, Mapping):
        raise failure("the match filter must be an expression in an object", 15959)
    check(spec)
    return lambda docs: [d for d in docs if filter_applies(spec, d)]


def _project(spec, database) -> Callable:
    if not isinstance(spec, Mapping) or not spec:
        raise failure("Invalid $project :: caused by :: projection specification must have at least one field",
                      51272)
    try:
        function = compile_project(spec)
        return lambda docs: [function(d) for d in docs]
    except Unsupported:
        parsed = PR.parse(spec, expressions=True)
        return lambda docs: [PR.apply(d, parsed) for d in docs]


def _set_path(doc: dict, parts: list[str], value) -> None:
    """`value` at the dotted path (documents made on the way; `MISSING` removes the field)."""
    for part in parts[:-1]:
        child = doc.get(part)
        if not isinstance(child, dict):
            if value is MISSING:
                return
            child = doc[part] = {}
        doc = child
    if value is MISSING:
        doc.pop(parts[-1], None)
    else:
        doc[parts[-1]] = value


def _field_name(path: str, stage: str) -> list[str]:
    if not isinstance(path, str) or not path or path.startswith("$") or "" in path.split("."):
        raise failure(f"Invalid {stage} :: caused by :: FieldPath field names may not be empty strings or start "
                      f"with '$': {path!r}", 40352 if path == "" else 16410)
    return path.split(".")


def _add_fields(spec, database, name="$addFields") -> Callable:
    if not isinstance(spec, Mapping):
        raise failure(f"{name} specification stage must be an object, got {type(spec).__name__}", 40272)
    fields: list[tuple[list[str], Callable, bool]] = []

    def collect(prefix: list[str], document: Mapping):
        for key, value in document.items():
            parts = prefix + _field_name(key, name)
            if isinstance(value, Mapping) and value and not str(next(iter(value))).startswith("$"):
                collect(parts, value)  # a document of fields: added into the existing document
            else:
                fields.append((parts, compile_expression(value)))
    collect([], spec)

    def add(docs):
        out = []
        for doc in _one_document(docs):
            new = _copy(doc)
            for parts, function in fields:
                _set_path(new, parts, function(doc, {}))
            out.append(new)
        return out
    return add


def _copy(doc: dict) -> dict:
    """A copy whose documents on any path may be changed (arrays and values are shared)."""
    return {k: _copy(v) if type(v) is dict else v for k, v in doc.items()}


def _unset(spec, database) -> Callable:
    paths = [spec] if isinstance(spec, str) else spec
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        raise failure("$unset specification must be a string or an array of strings", 31002)
    parsed = PR.parse({p: 0 for p in paths}, expressions=True)
    return lambda docs: [PR.apply(d, parsed) for d in _one_document(docs)]


def _replace_root(spec, database) -> Callable:
    if not isinstance(spec, Mapping) or set(spec) != {"newRoot"}:
        raise failure("no newRoot specified for the $replaceRoot stage", 40231)
    function = compile_expression(spec["newRoot"])

    def replace(docs):
        out = []
        for doc in _one_document(docs):
            root = function(doc, {})
            if not isinstance(root, dict):
                raise failure("'newRoot' expression must evaluate to an object, but resulting value was: "
                              f"{'MISSING' if root is MISSING else repr(root)}. Type of resulting value: "
                              f"'{'missing' if root is MISSING else type(root).__name__}'", 40228)
            out.append(root)
        return out
    return replace


def sort_spec(spec) -> list[tuple[str, int]]:
    if not isinstance(spec, Mapping):
        raise failure("the $sort key specification must be an object", 15973)
    if not spec:
        raise failure("$sort stage must have at least one sort key", 15976)
    out = []
    for field, direction in spec.items():
        if isinstance(direction, Mapping):
            raise failure("$meta sort keys are not implemented by the embedded engine (it has no text score)", 238)
        if isinstance(direction, bool) or direction not in (1, -1):
            raise failure("$sort key ordering must be 1 (for ascending) or -1 (for descending)", 15975)
        out.append((field, int(direction)))
    return out


def _sort(spec, database) -> Callable:
    keys = sort_spec(spec)
    return lambda docs: sorted(_one_document(docs), key=lambda d: K.document_sort_key(d, keys))


def _count_of(value, stage: str, code: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise failure(f"invalid argument to {stage} stage: Expected an integer: {value!r}", code)
    return int(value)


def _skip(spec, database) -> Callable:
    n = _count_of(spec, "$skip", 5107200)
    if n < 0:
        raise failure(f"invalid argument to $skip stage: Expected a non-negative number in: $skip: {n}", 5107200)
    return lambda docs: docs[n:]


def _limit(spec, database) -> Callable:
    n = _count_of(spec, "$limit", 5107201)
    if n <= 0:
        raise failure("the limit must be positive", 15958)
    return lambda docs: docs[:n]


# --- $group ---------------------------------------------------------------------------------------------


def _numeric(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) or type(value).__name__ == "Decimal128"


class _Sum:
    def __init__(self):
        self.total = 0

    def add(self, value):
        if _numeric(value):
            self.total += value.to_decimal() if type(value).__name__ == "Decimal128" else value

    def result(self):
        return self.total


class _Avg:
    def __init__(self):
        self.total, self.n = 0, 0

    def add(self, value):
        if _numeric(value):
            self.total += value
            self.n += 1

    def result(self):
        return self.total / self.n if self.n else None


class _Extreme:
    def __init__(self, sign: int):
        self.sign, self.best = sign, MISSING

    def add(self, value):
        if value is MISSING or value is None:
            return
        if self.best is MISSING or compare(value, self.best) * self.sign > 0:
            self.best = value

    def result(self):
        return None if self.best is MISSING else self.best


class _First:
    def __init__(self):
        self.value, self.seen = None, False

    def add(self, value):
        if not self.seen:
            self.value, self.seen = (None if value is MISSING else value), True

    def result(self):
        return self.value


class _Last(_First):
    def add(self, value):
        self.value = None if value is MISSING else value


class _Push:
    def __init__(self):
        self.values = []

    def add(self, value):
        if value is not MISSING:
            self.values.append(value)

    def result(self):
        return self.values


class _AddToSet(_Push):
    def add(self, value):
        if value is not MISSING and not any(equal(value, v) for v in self.values):
            self.values.append(value)


_ACCUMULATORS = {"$sum": _Sum, "$avg": _Avg, "$min": lambda: _Extreme(-1), "$max": lambda: _Extreme(1),
                 "$first": _First, "$last": _Last, "$push": _Push, "$addToSet": _AddToSet, "$count": _Sum}


def _group(spec, database) -> Callable:
    if not isinstance(spec, Mapping):
        raise failure("a group's fields must be specified in an object", 15947)
    if "_id" not in spec:
        raise failure("a group specification must include an _id", 15955)
    key = compile_expression(spec["_id"])
    fields = []
    for name, value in spec.items():
        if name == "_id":
            continue
        if "." in name:
            raise failure(f"The field name '{name}' cannot contain '.'", 40235)
        if not isinstance(value, Mapping) or len(value) != 1:
            raise failure(f"The field '{name}' must specify one accumulator", 40238)
        (op, argument), = value.items()
        if op not in _ACCUMULATORS:
            raise failure(f"unknown group operator '{op}'", 15952)
        if op == "$count":
            if argument != {}:
                raise failure("$count takes no arguments, i.e. $count:{}", 5484300)
            argument = 1
        if isinstance(argument, list) and op not in ("$push", "$addToSet"):
            raise failure(f"The {op} accumulator is a unary operator", 40237)
        fields.append((name, _ACCUMULATORS[op], compile_expression(argument)))

    def group(docs):
        groups: dict[bytes, tuple] = {}
        for doc in docs:
            value = key(doc, {})
            value = None if value is MISSING else value
            encoded = K.encode(value if not isinstance(value, RawDocument) else value.decode())
            if encoded not in groups:
                groups[encoded] = (value, [(name, make()) for name, make, _ in fields])
            accumulators = groups[encoded][1]
            for (_, accumulator), (_, _, argument) in zip(accumulators, fields, strict=True):
                accumulator.add(argument(doc, {}))
        return [{"_id": value, **{name: acc.result() for name, acc in accumulators}}
                for value, accumulators in groups.values()]
    return group


# --- $unwind, $lookup, $count, $facet, $sortByCount, $out -----------------------------------------------


def _unwind(spec, database) -> Callable:
    if isinstance(spec, str):
        spec = {"path": spec}
    if not isinstance(spec, Mapping):
        raise failure("expected either a string or an object as specification for $unwind stage", 15981)
    unknown = set(spec) - {"path", "includeArrayIndex", "preserveNullAndEmptyArrays"}
    if unknown:
        raise failure(f"unrecognized option to $unwind stage: {sorted(unknown)[0]}", 28811)
    path = spec.get("path")
    if not isinstance(path, str):
        raise failure("no path specified to $unwind stage", 28812)
    if not path.startswith("$"):
        raise failure("path option to $unwind stage should be prefixed with a '$': " + path, 28818)
    parts = _field_name(path[1:], "$unwind")
    index = spec.get("includeArrayIndex")
    if index is not None and (not isinstance(index, str) or index.startswith("$")):
        raise failure("includeArrayIndex option to $unwind stage should not be prefixed with a '$'", 28822)
    preserve = spec.get("preserveNullAndEmptyArrays", False)
    if not isinstance(preserve, bool):
        raise failure("expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage", 28809)
    reach = compile_expression(path)

    def unwind(docs):
        out = []
        for doc in _one_document(docs):
            value = reach(doc, {})
            if isinstance(value, list) and value:
                for n, element in enumerate(value):
                    new = _copy(doc)
                    _set_path(new, parts, element)
                    if index is not None:
                        _set_path(new, index.split("."), n)
                    out.append(new)
            elif isinstance(value, list) or value is None or value is MISSING:
                if preserve:
                    new = _copy(doc)
                    if isinstance(value, list):
                        _set_path(new, parts, MISSING)
                    if index is not None:
                        _set_path(new, index.split("."), None)
                    out.append(new)
            else:  # a value that is not an array is unwound as an array of itself
                new = _copy(doc)
                if index is not None:
                    _set_path(new, index.split("."), None)
                out.append(new)
        return out
    return unwind


def _lookup(spec, database) -> Callable:
    if not isinstance(spec, Mapping):
        raise failure("the $lookup stage specification must be an object", 40319)
    unknown = set(spec) - {"from", "localField", "foreignField", "as", "let", "pipeline"}
    if unknown:
        raise failure(f"unknown argument to $lookup: {sorted(unknown)[0]}", 9)
    if not isinstance(spec.get("as"), str):
        raise failure("must specify 'as' field for a $lookup", 40321)
    source = spec.get("from")
    if isinstance(source, Mapping):
        raise _not_implemented("$lookup from another database")
    if not isinstance(source, str):
        raise failure("$lookup 'from' field must be a string", 40321)
    local, foreign = spec.get("localField"), spec.get("foreignField")
    if (local is None) != (foreign is None):
        raise failure("$lookup requires both or neither of 'localField' and 'foreignField' to be specified", 40321)
    sub = spec.get("pipeline")
    if local is None and sub is None:
        raise failure("$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified",
                      40321)
    lets = {name: compile_expression(e) for name, e in (spec.get("let") or {}).items()}
    if sub is not None:
        if not isinstance(sub, list):
            raise failure("$lookup argument 'pipeline' must be an array", 40321)
        compile_pipeline(sub, database)  # checked once, as the server parses it
    name = spec["as"].split(".")

    def lookup(docs):
        target = database[source]
        out = []
        for doc in _one_document(docs):
            query = {}
            if local is not None:
                values = [v for v in _local_values(doc, local)]
                query = {foreign: {"$in": values}}
            if sub is None:
                found = list(target.find(query))
            else:
                bound = {n: (None if (v := f(doc, {})) is MISSING else v) for n, f in lets.items()}
                stages = V.in_pipeline(([{"$match": query}] if query else []) + list(sub), bound)
                found = list(target.aggregate(stages))
            new = _copy(doc)
            _set_path(new, name, found)
            out.append(new)
        return out
    return lookup


def _local_values(doc, path: str) -> list:
    values, _ = K.values_at(doc, path)
    out = []
    for v in values:
        if v is K.UNDEFINED:
            continue
        out.append(v)
    return out or [None]


def _count(spec, database) -> Callable:
    if not isinstance(spec, str) or not spec:
        raise failure("the count field must be a non-empty string", 40156)
    if spec.startswith("$"):
        raise failure("the count field cannot be a $-prefixed path", 40158)
    if "." in spec:
        raise failure("the count field cannot contain '.'", 40160)
    return lambda docs: [{spec: len(docs)}] if docs else []


def _facet(spec, database) -> Callable:
    if not isinstance(spec, Mapping) or not spec:
        raise failure("the $facet specification must be a non-empty object", 40169)
    facets = {}
    for name, stages in spec.items():
        if not isinstance(stages, list) or not stages:
            raise failure(f"arguments to $facet must be arrays, {name} is {type(stages).__name__}", 40170)
        for stage in stages:
            if isinstance(stage, Mapping) and next(iter(stage), None) in ("$out", "$merge", "$facet"):
                raise failure(f"{next(iter(stage))} is not allowed to be used within a $facet stage", 40600)
        facets[name] = compile_pipeline(stages, database)
    return lambda docs: [{name: run_compiled(f, list(_one_document(docs))) for name, f in facets.items()}]


def _sort_by_count(spec, database) -> Callable:
    if not (isinstance(spec, str) and spec.startswith("$")) and not (isinstance(spec, Mapping) and spec and str(
            next(iter(spec))).startswith("$")):
        raise failure("the sortByCount field must be defined as a $-prefixed path or an expression", 40148)
    group = _group({"_id": spec, "count": {"$sum": 1}}, database)
    sort = _sort({"count": -1}, database)
    return lambda docs: sort(group(docs))


def _out(spec, database) -> Callable:
    if isinstance(spec, Mapping):
        if set(spec) - {"db", "coll", "timeseries"} or "timeseries" in spec or not isinstance(spec.get("coll"), str):
            raise failure("$out supports a collection name, or {db, coll}", 16990)
        target_db, name = spec.get("db", None), spec["coll"]
    elif isinstance(spec, str) and spec:
        target_db, name = None, spec
    else:
        raise failure("$out only supports a string or object argument", 16990)

    def out(docs):
        base = database if target_db in (None, database.name) else database.client[target_db]
        target = base[name]
        written = _one_document(docs)
        target.delete_many({})  # the server replaces the collection's documents with the results
        if written:
            target.insert_many(written)
        return []
    return out


_STAGES = {"$match": _match, "$project": _project, "$addFields": _add_fields,
           "$set": lambda spec, db: _add_fields(spec, db, "$set"), "$unset": _unset, "$replaceRoot": _replace_root,
           "$sort": _sort, "$skip": _skip, "$limit": _limit, "$group": _group, "$unwind": _unwind,
           "$lookup": _lookup, "$count": _count, "$facet": _facet, "$sortByCount": _sort_by_count, "$out": _out}


def compile_stage(stage: Mapping, database) -> Callable:
    if not isinstance(stage, Mapping) or len(stage) != 1:
        raise failure("A pipeline stage specification object must contain exactly one field.", 40323)
    stage = ST.normalize(stage)
    (name, spec), = stage.items()
    if ST.has_field_ops(stage):  # $setField and its kin: bound per document (docstore.query.stages)
        def per_document(docs):
            out = []
            for doc in _one_document(docs):
                out.extend(compile_stage(ST.for_document(stage, doc), database)([doc]))
            return out
        return per_document
    if name in _STAGES:
        return _STAGES[name](spec, database)
    if name in _NOT_IMPLEMENTED or name == "$merge":
        raise _not_implemented(name)
    raise failure(f"Unrecognized pipeline stage name: '{name}'", 40324)


def compile_pipeline(pipeline: list, database) -> list[Callable]:
    for n, stage in enumerate(pipeline):
        if isinstance(stage, Mapping) and "$out" in stage and n != len(pipeline) - 1:
            raise failure("$out can only be the final stage in the pipeline", 40601)
    return [compile_stage(stage, database) for stage in pipeline]


def run_compiled(stages: list[Callable], docs: list) -> list:
    for stage in stages:
        docs = stage(docs)
    return docs


def run(docs: list, database, pipeline: list) -> list:
    """The stages of `pipeline` applied to `docs` (documents the engine holds: naive dates)."""
    return run_compiled(compile_pipeline(pipeline, database), docs)
