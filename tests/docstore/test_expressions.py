"""docstore.query.expressions: a `$project` stage the engine evaluates itself gives what mongomock's
implementation gives (the engine's reference semantics) for the expressions a page of an
array uses, and hands anything else to mongomock."""

import copy
import datetime as dt

import bson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mongomock import aggregate

from docstore.exec.executor import CODEC
from docstore.query import semantics as S
from docstore.query.expressions import Unsupported, compile_project
from docstore.storage.raw import RawDocument


def in_place(doc: dict) -> RawDocument:
    """The document as the engine hands it to a `$project` stage: its stored bytes, unread."""
    return RawDocument(bson.encode(doc), CODEC)


ids = st.sampled_from(["a", "b", "c", "d"])
replies = st.recursive(st.just([]), lambda inner: st.lists(st.fixed_dictionaries({"id": ids, "replies": inner}),
                                                           max_size=4), max_leaves=15)
documents = st.builds(lambda r, c: {"_id": 1, "layout": "nested", "replies": r, "comments": c, "count": len(c)},
                      replies, st.lists(st.fixed_dictionaries({"id": ids, "n": st.integers(0, 3)}), max_size=6))


def nested(path, array="$replies"):
    """The element whose path of ids is `path`, as the embedded manager asks for it."""
    element = {"$arrayElemAt": [{"$filter": {"input": array, "as": "c", "cond": {"$eq": ["$$c.id", path[0]]}}}, 0]}
    if len(path) == 1:
        return element
    return {"$let": {"vars": {"e": element}, "in": nested(path[1:], "$$e.replies")}}


expressions = st.one_of(
    st.lists(ids, min_size=1, max_size=3).map(nested),
    st.integers(-8, 8).map(lambda i: {"$arrayElemAt": ["$comments", i]}),
    st.sampled_from(["$count", "$layout", {"$literal": "$x"}, "text"]),
    ids.map(lambda i: {"$filter": {"input": "$comments", "as": "k", "cond": {"$eq": ["$$k.id", i]}}}),
    st.integers(0, 3).map(lambda n: {"$filter": {"input": "$comments", "cond": {"$eq": ["$$this.n", n]}}}),
    st.sampled_from(["$replies.id", "$comments.n", "$comments.id"]),
    ids.map(lambda i: {"$let": {"vars": {"e": {"$arrayElemAt": ["$replies", 0]}}, "in": "$$e.replies.id"}}),
)
projects = st.builds(lambda fields, keep_id, include: {**fields, **({"_id": 0} if not keep_id else {}),
                                                       **({"count": 1} if include else {})},
                     st.dictionaries(st.sampled_from(["e0", "e1", "e2"]), expressions, min_size=1, max_size=3),
                     st.booleans(), st.booleans())


def ids_of(expression) -> list[str] | None:
    """The path of ids of an expression `nested()` built, else None."""
    if not isinstance(expression, dict):
        return None
    if "$let" in expression:
        first, rest = ids_of(expression["$let"]["vars"]["e"]), ids_of(expression["$let"]["in"])
        return first + rest if first is not None and rest is not None else None
    if "$arrayElemAt" in expression and isinstance(expression["$arrayElemAt"][0], dict) \
            and "$filter" in expression["$arrayElemAt"][0]:
        return [expression["$arrayElemAt"][0]["$filter"]["cond"]["$eq"][1]]
    return None


def as_the_server(spec: dict, docs: list[dict], expected: list[dict]) -> list[dict]:
    """mongomock's answers, where it differs from the server's documented rule: when a level of
    a path of ids above the last is not there, the `$let` variable is missing and mongomock drops
    the field; on a server `$filter` and `$arrayElemAt` of a missing array give null (the
    manual's "$filter" and "$arrayElemAt"), so the field is null."""
    out = []
    for doc, answer in zip(docs, expected, strict=True):
        answer = dict(answer)
        for key, value in spec.items():
            path = ids_of(value)
            if path is None or len(path) < 2:
                continue
            level = doc.get("replies")
            for wanted in path[:-1]:
                level = next((e for e in level or [] if e.get("id") == wanted), None)
                level = level.get("replies") if level is not None else None
                if level is None:
                    answer[key] = None
                    break
        out.append(answer)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(documents, min_size=1, max_size=3), projects)
def test_a_project_stage_gives_what_mongomock_gives(docs, spec):
    expected = as_the_server(spec, docs, list(aggregate.process_pipeline(copy.deepcopy(docs), None,
                                                                         [{"$project": spec}], None)))
    assert list(S.run_pipeline(copy.deepcopy(docs), None, [{"$project": spec}])) == expected
    try:
        served = [compile_project(spec)(doc) for doc in docs]
    except Unsupported:
        return  # handed to mongomock: the line above
    assert served == expected
    # Read in place from its stored bytes, the document gives the same (docstore.storage.raw).
    assert [compile_project(spec)(in_place(doc)) for doc in docs] == expected


@settings(max_examples=100, deadline=None)
@given(replies.filter(bool), st.data())
def test_the_element_at_a_path_of_ids_is_served_by_the_engine(tree, data):
    """The embedded manager's hot page asks for elements by their path of ids: the engine answers
    those itself (no Unsupported) and as mongomock does, where mongomock follows the server
    (`as_the_server`: a path through repeated ids takes the first element of each, which may
    lack the next level)."""
    doc = {"_id": 1, "replies": tree}
    path, level = [], tree
    while level:
        element = data.draw(st.sampled_from(level))
        path.append(element["id"])
        if data.draw(st.booleans()):
            break
        level = element["replies"]
    spec = {"_id": 0, "e0": nested(path)}
    expected = as_the_server(spec, [doc], list(aggregate.process_pipeline([copy.deepcopy(doc)], None,
                                                                          [{"$project": spec}], None)))
    assert [compile_project(spec)(doc)] == expected
    assert [compile_project(spec)(in_place(doc))] == expected


scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**31, 2**31 - 1), st.integers(-2**63, 2**63 - 1),
                    st.floats(allow_nan=False), st.text(max_size=5), st.binary(max_size=5),
                    st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1)).map(
                        lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)),
                    st.builds(bson.ObjectId), st.builds(bson.Int64, st.integers(-2**63, 2**63 - 1)))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.sampled_from(["id", "x", "y"]), inner,
                                                                       max_size=3)), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(values, max_size=5), st.dictionaries(st.sampled_from(["id", "x"]), values, max_size=2),
       st.integers(-6, 6), st.sampled_from(["a", "", "é", "id"]))
def test_every_bson_type_reads_in_place_as_decoded(elements, head, index, wanted):
    """Each BSON type a document may hold is read from the stored bytes as bson.decode gives it:
    what `$arrayElemAt` picks, what `$filter` keeps, a whole field."""
    doc = {"_id": 1, **head, "comments": elements}
    spec = {"e": {"$arrayElemAt": ["$comments", index]}, "x": 1, "id": 1,
            "f": {"$filter": {"input": "$comments", "as": "c", "cond": {"$eq": ["$$c.id", wanted]}}}}
    stored = bson.decode(bson.encode(doc), CODEC)  # what the engine holds (dates to the millisecond, naive)
    # The decoded document is the reference (the tests above hold it to mongomock's answers; here
    # the elements need not be documents, where mongomock drops a `$filter` the server answers).
    assert compile_project(spec)(in_place(doc)) == compile_project(spec)(stored)
    picked = {"e": spec["e"], "x": 1, "id": 1}
    assert [compile_project(picked)(in_place(doc))] == list(
        aggregate.process_pipeline([copy.deepcopy(stored)], None, [{"$project": picked}], None))
    assert in_place(doc).decode() == stored


@pytest.mark.parametrize("spec, expected", [
    ({"a": 0}, {"_id": 1, "comments": [{"id": "a"}, {"id": "b"}]}),
    ({"a.b": 1}, {"_id": 1, "a": {"b": 1}}),
    ({"x": {"$size": "$comments"}}, {"_id": 1, "x": 2}),
    ({"x": {"$eq": [[1], [1]]}}, {"_id": 1, "x": True}),
    ({"x": "$comments.id.y"}, {"_id": 1, "x": []}),
    ({"x": {"$eq": ["$missing", None]}}, {"_id": 1, "x": False}),     # a missing value is below null
])
def test_a_project_the_compiled_form_does_not_serve_runs_as_a_stage(spec, expected):
    """Exclusions and dotted paths are the `$project` stage's (docstore.query.pipeline), with the
    manual's answers; what the compiled form serves it answers the same."""
    doc = {"_id": 1, "comments": [{"id": "a"}, {"id": "b"}], "a": {"b": 1}}
    assert list(S.run_pipeline([copy.deepcopy(doc)], None, [{"$project": spec}])) == [expected]
    try:
        assert compile_project(spec)(doc) == expected
    except Unsupported:
        assert any(v == 0 or "." in k for k, v in spec.items())


@settings(max_examples=200, deadline=None)
@given(replies, st.data())
def test_the_position_of_an_id_in_an_array(tree, data):
    """`$indexOfArray` of an id in `$replies.id` (mongomock has no `$indexOfArray`: the reference
    is the list itself), at the top and one level down, decoded and in place."""
    doc = {"_id": 1, "replies": tree}
    wanted = data.draw(ids)
    top = [e["id"] for e in tree]
    first = tree[0]["replies"] if tree else None
    spec = {"_id": 0, "top": {"$indexOfArray": ["$replies.id", wanted]},
            "down": {"$let": {"vars": {"e": {"$arrayElemAt": ["$replies", 0]}},
                              "in": {"$indexOfArray": ["$$e.replies.id", wanted]}}}}
    expected = {"top": top.index(wanted) if wanted in top else -1}
    if first is not None:
        below = [e["id"] for e in first]
        expected["down"] = below.index(wanted) if wanted in below else -1
    else:
        expected["down"] = None  # the element of an empty array is missing: null, as for a missing array
    assert compile_project(spec)(doc) == expected
    assert compile_project(spec)(in_place(doc)) == expected
