"""Live updates of topic pages: one change stream per storage strategy and process, shared by
every open stream of that process (the publish-subscribe pattern), and the resume of a stream.

A `Hub` (one per strategy, started by the first subscriber, a daemon thread) reads its change
stream (comments/managers/live.py) and hands each change, already turned into the comments it
touched, to the subscribers of that change's discussion. 1,000 open streams cost one reader,
not 1,000: an idle stream is a queue. Their heartbeats come from the same thread: each subscriber
is handed `HEARTBEAT` when HEARTBEAT_SECONDS passed without a message for it, so an idle stream
holds no timer of its own (one clock per process rather than a timer per stream), and the
heartbeats of streams that opened at different times stay spread out.

Resuming after `Last-Event-ID` (the Server-Sent Events reconnection rule) splices two
sources without a gap or a repeat: the subscriber is registered first (from then on the hub
queues every change for it), then a private change stream resumes after the client's token
and is read up to the hub's position at registration (or until it has nothing more); the
queued changes the private stream already gave are dropped by their token. Tokens are
compared as the feed returns them (MongoDB: a change has one resume token, whichever stream
reads it).
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from comments.managers.live import (
    Changed,
    CommentChangeFeed,
    FeedUnavailable,
    ResumeLost,
    changed_comments,
    decode_token,
    discussion_of,
    encode_token,
    next_change,
)

__all__ = ["Change", "FeedUnavailable", "Hub", "ResumeLost", "catch_up", "close_streams", "decode_token", "hub",
           "keep_streams_out_of_collections", "stop_hubs"]
log = logging.getLogger(__name__)
QUEUE_MAX = 1000  # changes queued for one subscriber that does not read: past it, the stream starts afresh
RETRY_SECONDS = 1.0  # between attempts to reopen the hub's stream after an error
HEARTBEAT_SECONDS = 15.0  # an SSE comment line this often keeps proxies from closing an idle stream


@dataclass(frozen=True)
class Change:
    """One change of a discussion: the encoded resume token and the comments it touched;
    `lost` (no comments) tells the subscriber that the feed lost its place, `closed` that its
    stream is to end (the client reconnects with its last token and resumes)."""

    token: str | None
    items: tuple[Changed, ...] = ()
    lost: bool = False
    closed: bool = False
    beat: bool = False  # nothing happened: the stream sends a heartbeat
    # What the change renders to for viewers who all see the same (anonymous readers), filled by
    # the first stream that renders it: one render per change and process, not one per stream.
    shared: dict = field(default_factory=dict, compare=False, hash=False, repr=False)


HEARTBEAT = Change(None, beat=True)


@dataclass(eq=False)
class Subscriber:
    discussion_id: int
    deliver: Callable[[Change], None]  # called on the hub's thread: must not block
    position: str | None = None  # the hub's position when it registered
    queued: int = field(default=0)
    beat_at: float = 0.0  # when it is handed HEARTBEAT unless a change comes first (time.monotonic)


def _hand(sub: Subscriber, item: Change) -> None:
    """`sub.deliver(item)`; a reader whose delivery fails (its event loop closed with the
    process's shutdown) is logged and left for its own stream's end to unsubscribe."""
    try:
        sub.deliver(item)
    except Exception:
        log.exception("comments live: a change could not be handed to a reader of discussion %s", sub.discussion_id)


class Hub:
    """The one change-stream reader of one strategy in this process."""

    def __init__(self, storage: str):
        self.storage = storage
        self.lock = threading.Lock()
        self.subscribers: dict[int, set[Subscriber]] = {}
        self.position: dict | None = None  # the raw token the hub has read up to
        self.thread: threading.Thread | None = None
        self.stream = None
        self.stopping = threading.Event()

    def subscribe(self, discussion_id: int, deliver: Callable[[Change], None]) -> Subscriber:
        self._start()
        with self.lock:
            sub = Subscriber(discussion_id, deliver, encode_token(self.position) if self.position else None,
                             beat_at=time.monotonic() + HEARTBEAT_SECONDS)
            self.subscribers.setdefault(discussion_id, set()).add(sub)
        _counted(opened=1)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        with self.lock:
            subs = self.subscribers.get(sub.discussion_id)
            if subs is not None and sub in subs:
                subs.discard(sub)
                _counted(closed=1)
                if not subs:
                    del self.subscribers[sub.discussion_id]

    def _start(self) -> None:
        with self.lock:
            if self.thread is not None and self.thread.is_alive():
                return
            self.stream = CommentChangeFeed(self.storage).open(resume_after=self.position)
            self.position = self.stream.resume_token or self.position
            self.thread = threading.Thread(target=self._run, name=f"comments-live-{self.storage}", daemon=True)
            self.thread.start()

    def _beat(self) -> None:
        """HEARTBEAT to each subscriber that was handed nothing for HEARTBEAT_SECONDS."""
        now = time.monotonic()
        with self.lock:
            for subs in self.subscribers.values():
                for sub in subs:
                    if sub.beat_at <= now:
                        sub.beat_at = now + HEARTBEAT_SECONDS
                        _hand(sub, HEARTBEAT)

    def _run(self) -> None:
        beat_at = 0.0
        while not self.stopping.is_set():
            # Looked at about ten times a heartbeat (a reader's wait is at most its max await, 0.5 s).
            if time.monotonic() >= beat_at:
                self._beat()
                beat_at = time.monotonic() + min(1.0, HEARTBEAT_SECONDS / 10)
            try:
                change = next_change(self.stream)
            except Exception as exc:  # a connection error: reopen after the last token read (nothing lost)
                if not isinstance(exc, ResumeLost):
                    log.exception("comments live: the change stream of %s failed; reopening", self.storage)
                    time.sleep(RETRY_SECONDS)
                self._reopen(lost=isinstance(exc, ResumeLost))
                continue
            with self.lock:
                if change is None:
                    self.position = self.stream.resume_token or self.position
                    continue
                self.position = change["_id"]
                discussion_id = discussion_of(self.storage, change)
                subs = list(self.subscribers.get(discussion_id, ())) if discussion_id is not None else []
                if not subs:
                    continue
                try:
                    item = Change(encode_token(change["_id"]), tuple(changed_comments(self.storage, change)))
                except Exception:  # the thread serves every stream of the process: it must not end here
                    log.exception("comments live: a change of discussion %s could not be read", discussion_id)
                    item = Change(None, lost=True)  # its readers start afresh (reload) rather than miss it
                quiet_until = time.monotonic() + HEARTBEAT_SECONDS
                for sub in subs:
                    sub.beat_at = quiet_until
                    _hand(sub, item)

    def _reopen(self, *, lost: bool) -> None:
        """A new change stream after the hub's position; when that position is gone (the stream was
        down longer than the feed keeps), from now, and every subscriber is told to start afresh."""
        try:
            if not lost:
                try:
                    self.stream = CommentChangeFeed(self.storage).open(resume_after=self.position)
                    return
                except ResumeLost:
                    pass
            with self.lock:
                self.stream = CommentChangeFeed(self.storage).open()
                self.position = self.stream.resume_token
                for subs in self.subscribers.values():
                    for sub in subs:
                        sub.deliver(Change(None, lost=True))
        except Exception:  # the store is unreachable: the loop tries again
            log.exception("comments live: reopening the change stream of %s failed", self.storage)
            time.sleep(RETRY_SECONDS)


    def close_all(self) -> int:
        """End every stream of this hub (their browsers reconnect and resume); how many."""
        with self.lock:
            subs = [sub for subs in self.subscribers.values() for sub in subs]
            for sub in subs:
                sub.deliver(Change(None, closed=True))
        return len(subs)


# --- open streams and the garbage collector ----------------------------------------------------
# Each open stream keeps about 200 objects the collector tracks (Django's ASGI request and response,
# asgiref's contexts, the server's protocol, the generator, its task), and CPython's full (generation
# 2) collection walks every tracked object holding the GIL: with 500 streams a worker, 80 ms a
# collection against about 12 ms without them, which the pages' p99 shows. What survived a full
# collection is all reachable, so freezing it there (Python's gc.freeze: the permanent generation,
# which collections skip) moves the open streams out of later collections at no extra pause.
# Frozen objects are still freed by reference counting, but a frozen reference cycle is only freed
# once unfrozen; a closed stream leaves some (Django's handler keeps its tasks' exceptions, whose
# tracebacks hold its frame; messages' storage and the request refer to each other), and so may a
# page request in flight at the freeze. The bound: a freeze only once FREEZE_BATCH more streams are
# open than at the last one, and once as many streams closed since then as half of those it froze,
# gc.unfreeze: the next full collection walks everything once, frees those cycles, and its survivors
# are frozen again (what start-up froze among them: cms_site/startup.py).
FREEZE_BATCH = 100
_streams_lock = threading.Lock()
_streams = {"opened": 0, "closed": 0}  # since the process started
_frozen = {"open": 0, "closed": 0, "refreeze": False}  # at the last freeze; written by the callback only


def _counted(*, opened: int = 0, closed: int = 0) -> None:
    with _streams_lock:
        _streams["opened"] += opened
        _streams["closed"] += closed


def keep_streams_out_of_collections(phase: str, info: dict) -> None:
    """A `gc.callbacks` entry (cms_site/asgi.py): freeze the survivors of a full collection when a
    batch of streams opened since the last freeze; unfreeze once half the frozen streams closed.
    It reads the counters without their lock (the collection may run inside a thread holding it)."""
    if phase != "stop" or info.get("generation") != 2:
        return
    opened, closed = _streams["opened"], _streams["closed"]
    open_now = opened - closed
    if _frozen["refreeze"] or open_now >= _frozen["open"] + FREEZE_BATCH:
        gc.freeze()
        _frozen.update(open=open_now, closed=closed, refreeze=False)
    elif _frozen["open"] and closed - _frozen["closed"] > _frozen["open"] // 2:
        gc.unfreeze()
        _frozen.update(open=0, closed=closed, refreeze=True)


_hubs: dict[str, Hub] = {}
_hubs_lock = threading.Lock()


def hub(storage: str) -> Hub:
    with _hubs_lock:
        found = _hubs.get(storage)
        if found is None:
            found = _hubs[storage] = Hub(storage)
        return found


def stop_hubs() -> None:
    """Stop and forget every hub of this process, ending their streams (a worker's exit; tests)."""
    with _hubs_lock:
        hubs = list(_hubs.values())
        _hubs.clear()
    for found in hubs:
        found.close_all()
        found.stopping.set()
        if found.thread is not None:
            found.thread.join(timeout=5)
        if found.stream is not None:
            found.stream.close()


def close_streams() -> int:
    """End every open stream of this process (a graceful restart; the tests of resuming): each
    browser reconnects with its Last-Event-ID and misses nothing. How many were ended."""
    with _hubs_lock:
        hubs = list(_hubs.values())
    return sum(h.close_all() for h in hubs)


def catch_up(storage: str, discussion_id: int, *, after: dict, until: str | None, limit: int = 1000) -> list[Change]:
    """The discussion's changes after the raw token `after`, up to and including the hub position
    `until` (or until the feed has nothing more), at most `limit`; ResumeLost when the feed no
    longer holds `after`, or more than `limit` changes would have to be replayed."""
    stream = CommentChangeFeed(storage).open(resume_after=after, max_await_ms=50)
    out: list[Change] = []
    try:
        while True:
            change = next_change(stream)
            if change is None:
                return out
            token = encode_token(change["_id"])
            if discussion_of(storage, change) == discussion_id:
                if len(out) >= limit:
                    raise ResumeLost("too many changes to replay")
                out.append(Change(token, tuple(changed_comments(storage, change))))
            if until is not None and token == until:
                return out
    finally:
        stream.close()

