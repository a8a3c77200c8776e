"""The change table: the engine's oplog, what change streams read (MongoDB manual, "Change Streams"
and "Replica Set Oplog").

Every write appends one row per changed document to `_docstore_changes` inside the write's own
storage transaction, so an event is in the table exactly when its write committed: a crash never
shows a change that did not commit, nor loses one that did, and a write rolled back (a duplicate
key, a failed validation) leaves no event. Writers are serialized (`BEGIN IMMEDIATE`), so `seq`
(an AUTOINCREMENT rowid: never reused, also after the oldest rows are deleted) grows in commit
order: a reader that has read every row up to `seq` N misses nothing by reading `seq > N` next.
`seq` is the rowid, one more than the largest (SQLite's rowid rule without AUTOINCREMENT, which would
write the sqlite_sequence page with every change); `trim` always keeps the newest row, so no `seq`
is ever given twice.

A row: seq, at (wall time, ms since the epoch), coll, op ("insert", "update", "replace",
"delete", "drop", "rename"), key (the documentKey as BSON), doc (the full document as BSON, for
insert and replace; the target `{coll}` for rename), upd (updateDescription as BSON, for update),
size (the row's bytes, which `trim` adds up).

Bounded, as a server's oplog is by its size and `oplogMinRetentionHours`: rows older than the
retention age, or beyond the retention bytes counted from the newest, are deleted by `trim`
(run by the TTL pass, docstore.surface.client.Database). The highest deleted `seq` is kept in
`_docstore_meta` ('changes_trimmed'): a stream resuming from before it has lost history
(ChangeStreamHistoryLost, code 286)."""

from __future__ import annotations

import sqlite3

from pymongo.errors import OperationFailure

TABLE = "_docstore_changes"

SCHEMA = (f"CREATE TABLE IF NOT EXISTS {TABLE} (seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, "
          "coll TEXT NOT NULL, op TEXT NOT NULL, key BLOB, doc BLOB, upd BLOB, size INTEGER NOT NULL)")

# One statement a change, nothing read (a running byte count here doubled the statement's cost:
# `trim` counts the bytes instead).
_APPEND = f"INSERT INTO {TABLE} (at, coll, op, key, doc, upd, size) VALUES (?, ?, ?, ?, ?, ?, ?)"

HISTORY_LOST = 286


def create(conn: sqlite3.Connection) -> None:
    conn.execute(SCHEMA)


def append(conn: sqlite3.Connection, at_ms: int, coll: str, op: str, key: bytes | None,
           doc: bytes | None = None, upd: bytes | None = None) -> None:
    """One change, inside the running write transaction."""
    size = 48 + len(coll) + len(key or b"") + len(doc or b"") + len(upd or b"")
    conn.execute(_APPEND, (at_ms, coll, op, key, doc, upd, size))


def last_seq(conn: sqlite3.Connection) -> int:
    """The highest `seq` given (0: none; the newest row is never trimmed)."""
    row = conn.execute(f"SELECT seq FROM {TABLE} ORDER BY seq DESC LIMIT 1").fetchone()
    return row[0] if row else 0


def trimmed(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT v FROM _docstore_meta WHERE k='changes_trimmed'").fetchone()
    return int(row[0]) if row else 0


def read(conn: sqlite3.Connection, after: int, limit: int, colls: tuple[str, ...] | None = None) -> list[tuple]:
    """Up to `limit` rows with `seq > after`, in order: (seq, at, coll, op, key, doc, upd). `colls`:
    only these collections (None: every one)."""
    if colls is None:
        return conn.execute(f"SELECT seq, at, coll, op, key, doc, upd FROM {TABLE} WHERE seq > ? ORDER BY seq "
                            "LIMIT ?", (after, limit)).fetchall()
    marks = ", ".join("?" * len(colls))
    return conn.execute(f"SELECT seq, at, coll, op, key, doc, upd FROM {TABLE} WHERE seq > ? AND coll IN ({marks}) "
                        "ORDER BY seq LIMIT ?", (after, *colls, limit)).fetchall()


def seq_at(conn: sqlite3.Connection, at_ms: int, inc: int) -> int:
    """The position just before the first change at or after cluster time (at_ms seconds, inc):
    what `startAtOperationTime` starts from."""
    second = at_ms // 1000 * 1000
    row = conn.execute(f"SELECT seq FROM {TABLE} WHERE at >= ? + 1000 OR (at >= ? AND (seq & 4294967295) >= ?) "
                       "ORDER BY seq LIMIT 1", (second, second, inc)).fetchone()
    return row[0] - 1 if row else last_seq(conn)


def check_resumable(conn: sqlite3.Connection, after: int) -> None:
    """A stream may go on from `after` only while every change after it is still kept."""
    lost = trimmed(conn)
    if after < lost:
        msg = ("Resume of change stream was not possible, as the resume point may no longer be in the oplog. "
               f"(the change feed keeps changes after #{lost}; the resume token is at #{after})")
        raise OperationFailure(msg, HISTORY_LOST, {"ok": 0.0, "errmsg": msg, "code": HISTORY_LOST,
                                                   "codeName": "ChangeStreamHistoryLost"})


def _meta(conn: sqlite3.Connection, key: str) -> int:
    row = conn.execute("SELECT v FROM _docstore_meta WHERE k=?", (key,)).fetchone()
    return int(row[0]) if row else 0


def _set_meta(conn: sqlite3.Connection, key: str, value: int) -> None:
    conn.execute("INSERT INTO _docstore_meta (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
                 (key, value))


def trim(conn: sqlite3.Connection, before_ms: int, max_bytes: int) -> int:
    """Delete, inside a write transaction, the changes older than `before_ms` and those beyond
    `max_bytes` counted back from the newest, but never the newest (it carries the next `seq`).
    Returns how many were deleted. The table's size is counted here, not by the writes: the
    sizes of the rows appended since the last trim are added to the count kept in
    `_docstore_meta`, and those of the rows deleted taken off. Reads the new rows' sizes and the
    oldest rows (the rowid B-tree's ends): the cost is what was written and deleted since."""
    newest = last_seq(conn)
    if not newest:
        return 0
    counted = _meta(conn, "changes_counted")
    size = _meta(conn, "changes_bytes") + (conn.execute(
        f"SELECT coalesce(sum(size), 0) FROM {TABLE} WHERE seq > ?", (counted,)).fetchone()[0])
    first_kept, deleted = None, 0
    for seq, at, row_size in conn.execute(f"SELECT seq, at, size FROM {TABLE} WHERE seq < ? ORDER BY seq", (newest,)):
        if at >= before_ms and size <= max_bytes:
            first_kept = seq
            break
        size -= row_size
        deleted += 1
    if deleted:
        first_kept = first_kept or newest
        conn.execute(f"DELETE FROM {TABLE} WHERE seq < ?", (first_kept,))
        _set_meta(conn, "changes_trimmed", first_kept - 1)
    _set_meta(conn, "changes_counted", newest)
    _set_meta(conn, "changes_bytes", size)
    return deleted
