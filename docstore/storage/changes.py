"""The change table: the engine's oplog, what change streams read (MongoDB manual, "Change Streams"
and "Replica Set Oplog").

Every write appends one row per changed document to `_docstore_changes` inside the write's own
storage transaction, so an event is in the table exactly when its write committed: a crash never
shows a change that did not commit, nor loses one that did, and a write rolled back (a duplicate
key, a failed validation) leaves no event. Writers are serialized (`BEGIN IMMEDIATE`), so `seq`
(an AUTOINCREMENT rowid: never reused, also after the oldest rows are deleted) grows in commit
order: a reader that has read every row up to `seq` N misses nothing by reading `seq > N` next.

A row: seq, at (wall time, ms since the epoch), coll, op ("insert", "update", "replace",
"delete", "drop", "rename"), key (the documentKey as BSON), doc (the full document as BSON, for
insert and replace; the target `{coll}` for rename), upd (updateDescription as BSON, for update),
total (bytes appended up to and including this row, so the table's size is one subtraction).

Bounded, as a server's oplog is by its size and `oplogMinRetentionHours`: rows older than the
retention age, or beyond the retention bytes counted from the newest, are deleted by `trim`
(run by the TTL pass, docstore.surface.client.Database). The highest deleted `seq` is kept in
`_docstore_meta` ('changes_trimmed'): a stream resuming from before it has lost history
(ChangeStreamHistoryLost, code 286)."""

from __future__ import annotations

import sqlite3

from pymongo.errors import OperationFailure

TABLE = "_docstore_changes"

SCHEMA = (f"CREATE TABLE IF NOT EXISTS {TABLE} (seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, "
          "coll TEXT NOT NULL, op TEXT NOT NULL, key BLOB, doc BLOB, upd BLOB, total INTEGER NOT NULL)")

# One statement a change: the running byte count is the previous row's plus this row's (the
# previous row is the last of the rowid B-tree: one page read, already cached by the writer).
_APPEND = (f"INSERT INTO {TABLE} (at, coll, op, key, doc, upd, total) SELECT ?, ?, ?, ?, ?, ?, ? + "
           f"coalesce((SELECT total FROM {TABLE} ORDER BY seq DESC LIMIT 1), 0)")

HISTORY_LOST = 286


def create(conn: sqlite3.Connection) -> None:
    conn.execute(SCHEMA)


def append(conn: sqlite3.Connection, at_ms: int, coll: str, op: str, key: bytes | None,
           doc: bytes | None = None, upd: bytes | None = None) -> None:
    """One change, inside the running write transaction."""
    size = 48 + len(coll) + len(key or b"") + len(doc or b"") + len(upd or b"")
    conn.execute(_APPEND, (at_ms, coll, op, key, doc, upd, size))


def last_seq(conn: sqlite3.Connection) -> int:
    """The highest `seq` ever given (0: none), also when its row was trimmed."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name=?", (TABLE,)).fetchone()
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


def trim(conn: sqlite3.Connection, before_ms: int, max_bytes: int) -> int:
    """Delete, inside a write transaction, the changes older than `before_ms` and those beyond
    `max_bytes` counted back from the newest. Returns how many were deleted. Reads from the
    oldest row on (the rowid B-tree's first pages): the cost is the rows deleted."""
    newest = conn.execute(f"SELECT seq, total FROM {TABLE} ORDER BY seq DESC LIMIT 1").fetchone()
    if newest is None:
        return 0
    keep = conn.execute(f"SELECT seq FROM {TABLE} WHERE at >= ? AND total > ? ORDER BY seq LIMIT 1",
                        (before_ms, newest[1] - max_bytes)).fetchone()
    first_kept = keep[0] if keep else newest[0] + 1
    cur = conn.execute(f"DELETE FROM {TABLE} WHERE seq < ?", (first_kept,))
    if cur.rowcount:
        conn.execute("INSERT INTO _docstore_meta (k, v) VALUES ('changes_trimmed', ?) "
                     "ON CONFLICT (k) DO UPDATE SET v = excluded.v", (first_kept - 1,))
    return cur.rowcount
