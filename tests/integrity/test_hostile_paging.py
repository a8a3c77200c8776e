"""Crafted cursors and page numbers are a 400 or an empty page, never a 500 (nor a command a
server refuses: `$slice` with a limit of 0 or less, integers past BSON's 64 bits)."""

import pytest

from comments.managers.base import BACKWARD, FORWARD, encode_cursor
from comments.services import comment_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def slices(monkeypatch):
    """Every `$slice: [skip, limit]` projection sent to the engine; every filter and projection
    must encode as BSON (a server's driver raises OverflowError past 64-bit integers)."""
    import bson

    from core.mongo import get_db

    seen = []
    Collection = type(get_db()["engine_probe"])  # the embedded engine's class (never written)
    real = Collection.find

    def spy(self, filter=None, projection=None, *args, **kwargs):
        bson.encode({"filter": filter or {}, "projection": projection or {}})
        for value in (projection or {}).values() if isinstance(projection, dict) else ():
            if isinstance(value, dict) and isinstance(value.get("$slice"), list):
                seen.append(tuple(value["$slice"]))
        return real(self, filter, projection, *args, **kwargs)

    monkeypatch.setattr(Collection, "find", spy)
    real_aggregate = Collection.aggregate

    def aggregate(self, pipeline, *args, **kwargs):
        bson.encode({"pipeline": pipeline})
        return real_aggregate(self, pipeline, *args, **kwargs)

    monkeypatch.setattr(Collection, "aggregate", aggregate)
    return seen

LAYOUTS = [("document", "chronological"), ("document", "threaded"), ("embedded", "chronological"),
           ("embedded", "threaded"), ("bucketed", "chronological")]
HUGE = [0, 1, 2, 2**31, 2**53, 4 * 10**17, 461168601842738790, 2**62]


@pytest.mark.parametrize(("storage", "order"), LAYOUTS)
def test_crafted_chronological_cursors_are_answered(api_client, make_topic, make_user, storage, order, slices):
    topic, author = make_topic(storage, order=order), make_user()
    for n in range(3):
        comment_create(topic=topic, author=author, text=f"comment {n}")
    url = f"/api/topics/{topic.slug}/comments/"
    for direction in (FORWARD, BACKWARD):
        for key in HUGE:
            cursor = encode_cursor("chronological", direction, key)
            for size in (1, 20, 100):
                answer = api_client.get(url, {"order": "chronological", "cursor": cursor, "page_size": size})
                assert answer.status_code in (200, 400), (direction, key, size, answer.status_code)
                if answer.status_code == 200 and key >= 2**31 and direction == FORWARD:
                    assert answer.json()["results"] == []
    assert not [p for p in slices if p[1] <= 0], slices  # the server refuses "$slice limit must be positive"


@pytest.mark.parametrize(("storage", "order"), LAYOUTS)
def test_page_numbers_past_any_discussion_are_answered(api_client, client, make_topic, make_user, storage, order, slices):
    topic = make_topic(storage, order=order)
    comment_create(topic=topic, author=make_user(), text="one")
    for page in ("999999999", "461168601842738790", "9223372036854775807", "99999999999999999999999"):
        for size in ("1", "20", "100"):
            answer = api_client.get(f"/api/topics/{topic.slug}/comments/", {"page": page, "page_size": size})
            assert answer.status_code in (200, 400, 404), (page, size, answer.status_code)
            assert client.get(f"/t/{topic.slug}/", {"page": page}).status_code in (200, 302, 400, 404)


def test_crafted_hot_cursors_are_answered(api_client, make_topic, make_user, slices):
    topic = make_topic("document", order="threaded")
    comment_create(topic=topic, author=make_user(), text="one")
    for direction in (FORWARD, BACKWARD):
        for likes in HUGE:
            for seq in HUGE:
                cursor = encode_cursor("hot", direction, (likes, seq))
                answer = api_client.get(f"/api/topics/{topic.slug}/comments/", {"order": "hot", "cursor": cursor})
                assert answer.status_code in (200, 400), (direction, likes, seq, answer.status_code)
