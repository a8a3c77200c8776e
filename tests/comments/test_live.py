"""The live stream of a topic page (GET /t/<slug>/live/, Server-Sent Events): which comments a
change shows to which viewer, rendered as the page renders them, and resuming after
Last-Event-ID with nothing missed and nothing repeated. The change feed is the test's
(tests/comments/live_support.py) in pymongo's ChangeStream shape; the browser test uses the
store's own."""

import json

import pytest

from comments import live, services, views
from comments.managers import live as live_manager
from comments.managers.live import CommentChangeFeed, changed_comments, decode_token, encode_token, next_change
from moderation.services import comment_moderate
from tests.comments.live_support import FakeLog
from tests.comments.support import LAYOUTS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def feed(monkeypatch):
    log = FakeLog()
    monkeypatch.setattr(live_manager.CommentChangeFeed, "open", lambda self, **kw: log.open(self, **kw))
    monkeypatch.setattr(live, "HEARTBEAT_SECONDS", 0.05)
    yield log
    live.stop_hubs()


class Stream:
    """An open stream read message by message (the test client's streaming response)."""

    def __init__(self, client, url, **headers):
        self.response = client.get(url, **headers)
        self.chunks = iter(self.response.streaming_content) if self.response.streaming else iter(())
        self.last_id = None

    def messages(self, until, bound=400):
        """Messages (dicts: event, data, id) up to the first for which `until(message)` holds; at
        most `bound` chunks are read (heartbeats included), so a missing message fails the test."""
        out = []
        for _ in range(bound):
            text = next(self.chunks).decode()
            for block in text.split("\n\n"):
                message = _parse(block)
                if message is None:
                    continue
                if message.get("id"):
                    self.last_id = message["id"]
                out.append(message)
                if until(message):
                    return out
        raise AssertionError(f"no such message among {out}")

    def close(self):
        self.response.close()


def _parse(block: str):
    fields = {}
    for line in block.split("\n"):
        if not line or line.startswith(":"):
            continue
        name, _, value = line.partition(": ")
        fields[name] = value
    if not fields or set(fields) == {"retry"}:
        return None
    if "data" in fields:
        fields["data"] = json.loads(fields["data"])
    return fields


def comments_of(messages, event="comment"):
    return [m["data"] for m in messages if m.get("event") == event]


def _has_id(message):
    return "id" in message


def _changes(stream, storage):
    out = []
    while (change := next_change(stream)) is not None:
        out.append([(c.comment.id, c.new, c.comment.text, c.comment.likes) for c in changed_comments(storage, change)])
    return [c for c in out if c]


@pytest.mark.parametrize("storage,order", LAYOUTS)
def test_each_strategy_s_changes_name_the_comments_they_touched(make_topic, make_user, storage, order):
    """On the store's own change stream: a post names its comment as new (as it was then, even when
    the change is read after later writes), a like and an edit name the comment they changed."""
    topic, alice = make_topic(storage, order), make_user("alice")
    stream = CommentChangeFeed(storage).open(max_await_ms=10)
    first = services.comment_create(topic=topic, author=alice, text="first")
    reply = services.comment_create(topic=topic, author=alice, text="a reply", parent=first.id)
    services.comment_like(topic=topic, comment_id=first.id, user=make_user("bob"))
    services.comment_edit(topic=topic, comment_id=reply.id, text="edited", user=alice)
    posted_first, posted_reply, liked, edited = _changes(stream, storage)
    stream.close()
    assert posted_first == [(first.id, True, "first", 0)]
    assert posted_reply == [(reply.id, True, "a reply", 0)]
    assert (first.id, False, "first", 1) in liked and all(not new for _, new, _, _ in liked)
    assert (reply.id, False, "edited", 0) in edited and all(not new for _, new, _, _ in edited)


def test_a_token_survives_its_encoding_and_hostile_ids_are_refused():
    token = {"_data": "8263A1B2C3000000012B0229296E04"}
    assert decode_token(encode_token(token)) == token
    from core.errors import InvalidInput
    for bad in ["", "x" * 2000, "not base64!", "AAAA", encode_token({})]:
        with pytest.raises(InvalidInput):
            decode_token(bad)


def test_a_bad_last_event_id_is_a_400_in_the_api_s_error_shape(client, make_topic, feed):
    topic = make_topic("document", "chronological")
    response = client.get(f"/t/{topic.slug}/live/", HTTP_LAST_EVENT_ID="%%%")
    assert response.status_code == 400 and response.json()["code"] == "invalid"


def test_new_comments_edits_and_likes_reach_an_anonymous_reader(client, make_topic, make_user, feed):
    topic, alice = make_topic("document", "chronological"), make_user("alice")
    stream = Stream(client, f"/t/{topic.slug}/live/?after=0")
    assert stream.response["Content-Type"] == "text/event-stream"
    assert stream.response["X-Accel-Buffering"] == "no"
    assert comments_of(stream.messages(_has_id)) == []  # nothing posted after 0 yet; the opening position
    comment = services.comment_create(topic=topic, author=alice, text="Hello **live**")
    feed.emit_comment(topic, comment.id, new=True)
    [shown] = comments_of(stream.messages(_has_id))
    assert shown["id"] == comment.id and shown["new"] and "<strong>live</strong>" in shown["html"]
    assert f'id="c-{comment.id}"' in shown["html"]  # the page's own article
    services.comment_edit(topic=topic, comment_id=comment.id, text="Hello, edited", user=alice)
    feed.emit_comment(topic, comment.id, new=False)
    [edited] = comments_of(stream.messages(_has_id))
    assert not edited["new"] and "Hello, edited" in edited["html"]
    services.comment_like(topic=topic, comment_id=comment.id, user=make_user("bob"))
    feed.emit_comment(topic, comment.id, new=False, field="likes")
    [liked] = comments_of(stream.messages(_has_id))
    assert liked["likes"] == 1 and "1 like" in liked["html"]
    stream.close()


def test_what_a_viewer_may_not_see_is_never_sent(client, make_topic, make_user, editor, feed):
    """A hidden comment (author only) reaches its author and editors only; a removed one reaches
    readers as its placeholder, never its text; a new comment nobody else may see is not announced."""
    topic, alice, bob = make_topic("document", "chronological"), make_user("alice"), make_user("bob")
    visible = services.comment_create(topic=topic, author=alice, text="Alice says something")
    hidden = services.comment_create(topic=topic, author=alice, text="Alice's secret")
    comment_moderate(topic=topic, comment_ids=[hidden.id], action="hide", moderator=editor)
    readers = {}
    for name, user in (("anonymous", None), ("bob", bob), ("alice", alice), ("editor", editor)):
        from django.test import Client
        reader = Client()
        if user is not None:
            reader.force_login(user)
        readers[name] = Stream(reader, f"/t/{topic.slug}/live/")
        readers[name].messages(_has_id)  # the opening position
    feed.emit_comment(topic, hidden.id, new=True)  # as if the hidden comment had just been posted
    comment_moderate(topic=topic, comment_ids=[visible.id], action="remove", moderator=editor)
    feed.emit_comment(topic, visible.id, new=False, field="status")
    seen = {name: stream.messages(lambda m: m.get("id") == stream_id(feed)) for name, stream in readers.items()}
    for name in ("anonymous", "bob"):
        assert comments_of(seen[name]) == [], name
        [placeholder] = comments_of(seen[name], "hidden")
        assert placeholder["id"] == visible.id and "Alice says something" not in placeholder["html"]
    assert [c["id"] for c in comments_of(seen["alice"])] == [hidden.id]
    assert "Alice's secret" in comments_of(seen["alice"])[0]["html"]
    assert [c["id"] for c in comments_of(seen["editor"])] == [hidden.id, visible.id]
    assert "Alice says something" in comments_of(seen["editor"])[1]["html"]
    for stream in readers.values():
        stream.close()


def stream_id(feed) -> str:
    return encode_token(feed.events[-1][2]["_id"])


def test_a_draft_topic_s_stream_is_a_404_but_for_editors(client, editor, feed):
    from topics.services import topic_create
    draft = topic_create(author=editor, title="Draft", comment_storage="document", status="draft")
    assert client.get(f"/t/{draft.slug}/live/").status_code == 404
    client.force_login(editor)
    response = client.get(f"/t/{draft.slug}/live/")
    assert response.status_code == 200
    response.close()


def test_last_event_id_resumes_with_nothing_missed_and_nothing_repeated(client, make_topic, make_user, feed):
    topic, alice = make_topic("document", "chronological"), make_user("alice")
    other = make_topic("bucketed", "chronological")
    stream = Stream(client, f"/t/{topic.slug}/live/")
    first = services.comment_create(topic=topic, author=alice, text="one")
    feed.emit_comment(topic, first.id, new=True)
    stream.messages(lambda m: m.get("event") == "comment")
    stream.close()  # the connection drops here
    missed = []
    for i in range(3):
        comment = services.comment_create(topic=topic, author=alice, text=f"missed {i}")
        feed.emit_comment(topic, comment.id, new=True)
        missed.append(comment.id)
        noise = services.comment_create(topic=other, author=alice, text="elsewhere")  # another topic's change
        feed.emit_comment(other, noise.id, new=True)
    again = Stream(client, f"/t/{topic.slug}/live/", HTTP_LAST_EVENT_ID=stream.last_id)
    later = services.comment_create(topic=topic, author=alice, text="after the reconnect")
    feed.emit_comment(topic, later.id, new=True)
    got = comments_of(again.messages(lambda m: m.get("event") == "comment" and m["data"]["id"] == later.id))
    assert [c["id"] for c in got] == [*missed, later.id]
    again.close()


def test_a_token_the_feed_no_longer_holds_tells_the_page_to_reload(client, make_topic, make_user, feed):
    topic, alice = make_topic("document", "chronological"), make_user("alice")
    for text in ("one", "two"):
        feed.emit_comment(topic, services.comment_create(topic=topic, author=alice, text=text).id, new=True)
    feed.trimmed = 2  # the oplog rolled over
    stream = Stream(client, f"/t/{topic.slug}/live/", HTTP_LAST_EVENT_ID=encode_token(feed.token(1)))
    [reset] = [m for m in stream.messages(lambda m: m.get("event") == "reset")]
    assert "reload" in reset["data"]["detail"]


def test_a_fresh_stream_first_sends_what_was_posted_after_the_page_s_count(client, make_topic, make_user, feed):
    topic, alice = make_topic("document", "chronological"), make_user("alice")
    services.comment_create(topic=topic, author=alice, text="on the page")
    late = services.comment_create(topic=topic, author=alice, text="posted before the stream opened")
    stream = Stream(client, f"/t/{topic.slug}/live/?after=1")
    got = comments_of(stream.messages(lambda m: m.get("event") == "comment"))
    assert [c["id"] for c in got] == [late.id]
    stream.close()


def test_the_page_names_its_stream(client, make_topic, settings):
    topic = make_topic("document", "chronological")
    assert f'data-live-url="/t/{topic.slug}/live/"' in client.get(f"/t/{topic.slug}/").content.decode()
    settings.COMMENTS_LIVE = False
    assert "data-live-url" not in client.get(f"/t/{topic.slug}/").content.decode()
    assert client.get(f"/t/{topic.slug}/live/").status_code == 404


def test_without_change_streams_the_stream_answers_503_and_the_page_polls(client, make_topic, monkeypatch):
    """A store without change streams (a standalone MongoDB answers watch() with code 40573): 503,
    which the page's script takes as "poll instead"."""
    from pymongo.errors import OperationFailure

    from core.mongo import get_db

    def refuse(self, *args, **kwargs):
        raise OperationFailure("The $changeStream stage is only supported on replica sets", 40573)

    topic = make_topic("document", "chronological")
    live.stop_hubs()
    monkeypatch.setattr(type(get_db()["comments"]), "watch", refuse)
    try:
        response = client.get(f"/t/{topic.slug}/live/")
    finally:
        live.stop_hubs()
    assert response.status_code == 503 and response.json()["code"] == "live_unavailable"


@pytest.fixture
def store_feed(monkeypatch):
    """The store's own change streams (the embedded engine's watch(), or MongoDB's)."""
    monkeypatch.setattr(live, "HEARTBEAT_SECONDS", 0.05)
    live.stop_hubs()
    yield
    live.stop_hubs()


@pytest.mark.parametrize("storage,order", LAYOUTS)
def test_on_the_store_s_own_feed_a_dropped_stream_resumes_without_a_gap_or_a_repeat(client, make_topic, make_user,
                                                                                    storage, order, store_feed):
    topic, alice, bob = make_topic(storage, order), make_user("alice"), make_user("bob")
    stream = Stream(client, f"/t/{topic.slug}/live/?after=0")
    stream.messages(_has_id)  # the opening position
    first = services.comment_create(topic=topic, author=alice, text="one")
    [got] = comments_of(stream.messages(lambda m: m.get("event") == "comment" and "id" in m))
    assert (got["id"], got["new"]) == (first.id, True)
    stream.close()  # the connection drops here
    missed = [services.comment_create(topic=topic, author=alice, text=f"missed {i}").id for i in range(2)]
    services.comment_like(topic=topic, comment_id=first.id, user=bob)
    again = Stream(client, f"/t/{topic.slug}/live/", HTTP_LAST_EVENT_ID=stream.last_id)
    later = services.comment_create(topic=topic, author=alice, text="after the reconnect")
    got = comments_of(again.messages(lambda m: m.get("event") == "comment" and m["data"]["id"] == later.id))
    assert [c["id"] for c in got if c["new"]] == [*missed, later.id]
    assert any(c["id"] == first.id and c["likes"] == 1 and not c["new"] for c in got)
    again.close()


def test_readers_who_see_the_same_share_one_render_of_a_change(make_topic, make_user, feed, monkeypatch):
    """Anonymous readers are shown the same HTML: one render per change and process, not one per stream."""
    from django.test import Client

    topic, alice = make_topic("document", "chronological"), make_user("alice")
    renders = []
    original = views._Live.render
    monkeypatch.setattr(views._Live, "render", lambda self, c, **kw: renders.append(self.viewer) or original(self, c, **kw))
    signed_in = Client()
    signed_in.force_login(alice)
    streams = [Stream(Client(), f"/t/{topic.slug}/live/") for _ in range(3)] + [Stream(signed_in, f"/t/{topic.slug}/live/")]
    for stream in streams:
        stream.messages(_has_id)
    comment = services.comment_create(topic=topic, author=alice, text="Once for all of them")
    feed.emit_comment(topic, comment.id, new=True)
    for stream in streams:
        [shown] = comments_of(stream.messages(_has_id))
        assert "Once for all of them" in shown["html"]
        stream.close()
    assert len(renders) == 2 and sum(1 for v in renders if v.is_authenticated) == 1


def test_when_the_process_s_reader_loses_its_place_every_stream_is_told_to_reload(client, make_topic, feed):
    topic = make_topic("document", "chronological")
    stream = Stream(client, f"/t/{topic.slug}/live/")
    stream.messages(_has_id)
    with feed.lock:
        feed.trimmed = 10**6  # the reader was away longer than the feed keeps its changes
    [reset] = [m for m in stream.messages(lambda m: m.get("event") == "reset")]
    assert "reload" in reset["data"]["detail"]


def test_idle_subscribers_get_their_heartbeats_from_the_process_s_reader(make_topic, feed):
    """An idle stream holds no timer of its own: the hub's thread hands each subscriber HEARTBEAT when
    HEARTBEAT_SECONDS passed without a message for it (one clock per process, not one per stream)."""
    import queue

    topic = make_topic("document", "chronological")
    hub = live.hub(topic.comment_storage)
    got = [queue.Queue() for _ in range(3)]
    subs = [hub.subscribe(topic.discussion_id, q.put) for q in got]
    for q in got:
        assert q.get(timeout=10) is live.HEARTBEAT  # the timeout only bounds a failing wait
    for sub in subs:
        hub.unsubscribe(sub)
    assert not hub.subscribers


def test_an_asgi_stream_sends_changes_and_heartbeats(make_topic, make_user, feed):
    """The stream as Django's ASGI handler serves it (an async generator, `make serve`): it waits on
    its queue alone, the hub's heartbeats and changes both arrive, and closing it unsubscribes."""
    import asyncio

    from asgiref.sync import sync_to_async
    from django.test import AsyncClient

    topic, alice = make_topic("document", "chronological"), make_user("alice")

    async def read():
        response = await AsyncClient().get(f"/t/{topic.slug}/live/?after=0")
        chunks, text = response.streaming_content.__aiter__(), ""
        for _ in range(400):
            text += (await chunks.__anext__()).decode()
            if ": heartbeat" in text:
                break
        comment = await sync_to_async(services.comment_create)(topic=topic, author=alice, text="Hello *async*")
        await sync_to_async(feed.emit_comment)(topic, comment.id, new=True)
        for _ in range(400):
            text += (await chunks.__anext__()).decode()
            if "event: comment" in text:
                break
        await chunks.aclose()
        return text, comment

    text, comment = asyncio.run(read())
    assert ": heartbeat" in text
    [shown] = comments_of([m for m in map(_parse, text.split("\n\n")) if m])
    assert shown["id"] == comment.id and "<em>async</em>" in shown["html"]
    assert not live.hub(topic.comment_storage).subscribers


def test_a_busy_discussion_does_not_hold_back_another_discussion_s_heartbeats(make_topic, make_user, feed,
                                                                              monkeypatch):
    """Changes handed to one discussion's readers postpone only their own heartbeats: a reader of
    another discussion still gets its heartbeat while the first discussion is busy."""
    import queue
    import time

    monkeypatch.setattr(live, "HEARTBEAT_SECONDS", 0.3)
    busy, quiet = make_topic("document", "chronological"), make_topic("document", "chronological")
    comment = services.comment_create(topic=busy, author=make_user("alice"), text="busy")
    hub = live.hub(busy.comment_storage)
    busy_got, quiet_got = queue.Queue(), queue.Queue()
    subs = [hub.subscribe(busy.discussion_id, busy_got.put), hub.subscribe(quiet.discussion_id, quiet_got.put)]
    while not quiet_got.empty():  # what subscribing handed it
        quiet_got.get()
    beats = 0
    for _ in range(300):  # a change to the busy discussion far more often than HEARTBEAT_SECONDS
        feed.emit_comment(busy, comment.id, new=False)
        time.sleep(0.01)
        while not quiet_got.empty():
            beats += quiet_got.get() is live.HEARTBEAT
        if beats:
            break
    for sub in subs:
        hub.unsubscribe(sub)
    assert beats, "the quiet discussion's reader got no heartbeat while the other discussion was busy"


def test_a_change_that_cannot_be_read_sends_its_readers_afresh_and_the_hub_goes_on(make_topic, make_user, feed,
                                                                                 monkeypatch):
    """The hub's thread serves every stream of the process: a change it cannot read (the store
    failing then) tells that discussion's readers to start afresh, and later changes still arrive."""
    import queue

    topic = make_topic("document", "chronological")
    comment = services.comment_create(topic=topic, author=make_user("alice"), text="one")
    hub = live.hub(topic.comment_storage)
    got = queue.Queue()
    sub = hub.subscribe(topic.discussion_id, got.put)
    real, failing = live.changed_comments, {"n": 1}

    def once_failing(storage, change):
        if failing["n"]:
            failing["n"] -= 1
            raise RuntimeError("the store went away")
        return real(storage, change)

    monkeypatch.setattr(live, "changed_comments", once_failing)

    def next_change_item():
        for _ in range(400):  # heartbeats skipped; the bound only ends a failing wait
            item = got.get(timeout=10)
            if item is not live.HEARTBEAT:
                return item
        raise AssertionError("no change arrived")

    feed.emit_comment(topic, comment.id, new=False)
    assert next_change_item().lost
    feed.emit_comment(topic, comment.id, new=False)
    item = next_change_item()
    assert not item.lost and [c.comment.id for c in item.items] == [comment.id]
    hub.unsubscribe(sub)
