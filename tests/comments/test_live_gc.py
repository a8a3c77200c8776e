"""Open live streams and CPython's full garbage collections (comments/live.py,
`keep_streams_out_of_collections`): a batch of open streams is frozen out of the collector's walk,
and once half of them closed everything is unfrozen, so the cycles a closed stream leaves are freed."""

import asyncio
import gc
import weakref

import pytest

from comments import live
from tests.comments.test_live import feed  # noqa: F401  the change feed's stand-in

pytestmark = pytest.mark.django_db(transaction=True)


async def _open_streams(path, n, while_open):
    """`n` streams of `path` through cms_site.asgi (as uvicorn calls it), each until its first message;
    then `while_open()`, then every client disconnects."""
    from cms_site import asgi

    opened, gone = [], asyncio.Event()

    async def one():
        asked, first = [], []

        async def receive():
            if not asked:
                asked.append(1)
                return {"type": "http.request", "body": b"", "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            if message["type"] == "http.response.body" and message.get("body") and not first:
                first.append(1)
                opened.append(1)

        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
                 "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"after=0",
                 "headers": [(b"host", b"testserver"), (b"accept", b"text/event-stream")],
                 "client": ("127.0.0.1", 1), "server": ("testserver", 80)}
        await asgi.application(scope, receive, send)

    tasks = [asyncio.ensure_future(one()) for _ in range(n)]
    for _ in range(3000):  # bounds a stream that never opens
        if len(opened) == n:
            break
        await asyncio.sleep(0.01)
    assert len(opened) == n
    await while_open()
    gone.set()
    await asyncio.gather(*tasks)


@pytest.fixture
def collections(monkeypatch):
    """gc.freeze/unfreeze recorded instead of done, and the stream counters from zero."""
    done = []
    monkeypatch.setattr(live.gc, "freeze", lambda: done.append("freeze"))
    monkeypatch.setattr(live.gc, "unfreeze", lambda: done.append("unfreeze"))
    monkeypatch.setattr(live, "_streams", {"opened": 0, "closed": 0})
    monkeypatch.setattr(live, "_frozen", {"open": 0, "closed": 0, "refreeze": False})
    return done


def _full_collection():
    live.keep_streams_out_of_collections("stop", {"generation": 2, "collected": 0, "uncollectable": 0})


def test_a_batch_of_open_streams_is_frozen_and_unfrozen_once_half_of_them_closed(make_topic, feed, collections):  # noqa: F811
    topic = make_topic("document", "chronological")
    hub = live.hub(topic.comment_storage)
    subs = [hub.subscribe(topic.discussion_id, lambda change: None) for _ in range(live.FREEZE_BATCH - 1)]
    _full_collection()
    assert collections == []  # fewer than a batch: start-up's freeze alone
    subs.append(hub.subscribe(topic.discussion_id, lambda change: None))
    live.keep_streams_out_of_collections("stop", {"generation": 0, "collected": 0, "uncollectable": 0})
    assert collections == []  # only a full collection's survivors are all reachable
    _full_collection()
    assert collections == ["freeze"]
    _full_collection()
    assert collections == ["freeze"]  # nothing new opened
    for sub in subs[: live.FREEZE_BATCH // 2]:
        hub.unsubscribe(sub)
        hub.unsubscribe(sub)  # twice counts once
    _full_collection()
    assert collections == ["freeze"]  # half closed, not more
    hub.unsubscribe(subs[live.FREEZE_BATCH // 2])
    _full_collection()
    assert collections == ["freeze", "unfreeze"]  # the next full collection walks and frees what closed
    _full_collection()
    assert collections == ["freeze", "unfreeze", "freeze"]  # and what survived it is frozen again
    for sub in subs:
        hub.unsubscribe(sub)
    _full_collection()
    assert collections == ["freeze", "unfreeze", "freeze", "unfreeze"]
    _full_collection()
    _full_collection()
    assert collections == ["freeze", "unfreeze", "freeze", "unfreeze", "freeze"]  # no stream, nothing more


def test_streams_frozen_while_open_are_freed_after_they_close(make_topic, feed, monkeypatch):  # noqa: F811
    """Through the ASGI application `make serve` runs: a batch of open streams is frozen by the next
    full collection, and once they closed, their objects (cycles included) are freed, nothing kept."""
    from django.core.handlers.asgi import ASGIRequest

    import cms_site.asgi  # noqa: F401  installs the callback

    assert live.keep_streams_out_of_collections in gc.callbacks
    monkeypatch.setattr(live, "FREEZE_BATCH", 20)
    topic = make_topic("document", "chronological")
    path = f"/t/{topic.slug}/live/"
    requests, frozen = [], {}

    async def look():
        requests.extend(weakref.ref(o) for o in gc.get_referrers(ASGIRequest) if isinstance(o, ASGIRequest))
        gc.collect()  # a full collection: the callback freezes what survived it, the open streams
        frozen["count"] = gc.get_freeze_count()
        frozen["seen"] = sum(isinstance(o, ASGIRequest) for o in gc.get_referrers(ASGIRequest))  # not frozen

    gc.collect()
    before = gc.get_freeze_count()
    asyncio.run(_open_streams(path, 30, look))
    assert len(requests) >= 30 and frozen["count"] > before and frozen["seen"] == 0
    assert not live.hub(topic.comment_storage).subscribers
    gc.collect()  # all 30 closed: unfrozen
    gc.collect()  # and collected, the survivors frozen again
    assert [r for r in requests if r() is not None] == []
