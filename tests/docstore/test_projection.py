"""docstore: find's projections, the engine's own (MongoDB manual, "Project Fields to Return from
Query", `$slice`, `$elemMatch`, positional `$`), and the server's errors for the projections its
parser refuses, through `find`.

Every test opens its own temporary store (docstore.Client without a path)."""

import pytest
from pymongo.errors import OperationFailure

import docstore


@pytest.fixture
def coll():
    c = docstore.Client(default_db="t")
    coll = c["t"]["c"]
    coll.insert_one({"_id": 1, "x": 1, "a": [{"b": 1, "c": 2}, 3, {"c": 1}, {"b": 2}], "d": {"e": 1, "f": 2}})
    yield coll
    c.close()


def one(coll, projection, spec=None):
    return coll.find_one(spec or {}, projection)


def test_dotted_inclusions_and_exclusions_go_into_the_documents_of_arrays(coll):
    assert one(coll, {"a.b": 1}) == {"_id": 1, "a": [{"b": 1}, {}, {"b": 2}]}
    assert one(coll, {"a.b": 0, "d.e": 0, "_id": 0}) == {"x": 1, "a": [{"c": 2}, 3, {"c": 1}, {}], "d": {"f": 2}}
    assert one(coll, {"d": {"f": 1}, "_id": 0}) == {"d": {"f": 2}}      # a nested document is a dotted path
    assert one(coll, {"x": 1, "_id": 0}) == {"x": 1}


def test_slice_elem_match_and_positional(coll):
    assert one(coll, {"a": {"$slice": -1}}) == {"_id": 1, "x": 1, "a": [{"b": 2}], "d": {"e": 1, "f": 2}}
    assert one(coll, {"a": {"$slice": [1, 1]}, "_id": 1}) == {"_id": 1, "a": [3]}   # `_id: 1` is an inclusion
    assert one(coll, {"a": {"$elemMatch": {"c": 1}}}) == {"_id": 1, "a": [{"c": 1}]}
    assert one(coll, {"a": {"$elemMatch": {"c": 9}}, "x": 1}) == {"_id": 1, "x": 1}
    assert one(coll, {"a.$": 1}, {"a.b": 2}) == {"_id": 1, "a": [{"b": 2}]}
    assert one(coll, {"a.$": 1, "x": 1}, {"a": {"$elemMatch": {"c": {"$gt": 1}}}}) == {"_id": 1, "x": 1,
                                                                                       "a": [{"b": 1, "c": 2}]}


@pytest.mark.parametrize("projection, spec, code", [
    ({"x": 1, "d": 0}, {}, 31254),
    ({"x": 0, "d": 1}, {}, 31253),
    ({"d": 1, "d.e": 1}, {}, 31249),
    ({"d.e": 1, "d": 1}, {}, 31250),
    ({"d.e": {"$elemMatch": {"x": 1}}}, {}, 31275),
    ({"a": {"$slice": [1, 0]}}, {}, 31259),
    ({"a": {"$slice": "x"}}, {}, 31273),
    ({"a": {"$slice": [1]}}, {}, 31272),
    ({"a.$": 1}, {"x": 1}, 31277),
    ({"a.$": 1, "d.$": 1}, {"a": 1, "d": 1}, 31276),
    ({"a.$": 1, "d": {"$elemMatch": {"e": 1}}}, {"a": 1}, 31255),
    ({"d": {"$elemMatch": {"e": 1}}, "a.$": 1}, {"a": 1}, 31256),
    ({"a": {"$meta": "textScore"}}, {}, 238),
])
def test_a_projection_the_server_refuses_is_its_error_even_when_nothing_matches(coll, projection, spec, code):
    for filter_ in (spec, {"_id": "nothing", **spec}):
        with pytest.raises(OperationFailure) as failed:
            list(coll.find(filter_, projection))
        assert failed.value.code == code


def test_a_positional_projection_without_a_matching_element_is_the_servers_error(coll):
    with pytest.raises(OperationFailure) as failed:
        coll.find_one({"$or": [{"a.b": 9}, {"x": 1}]}, {"a.$": 1})
    assert failed.value.code == 51246
