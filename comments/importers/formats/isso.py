"""Isso's SQLite database (the file its `dbpath` names): `threads (id, uri, title)` and
`comments (tid, id, parent, created, modified, mode, remote_addr, text, author, email, website,
likes, dislikes, voters, notification)`; `created`/`modified` are Unix times, `mode` 1 accepted,
2 awaiting moderation (imported hidden), 4 deleted (a tombstone); `text` is Markdown. Read
through the sqlite3 module, read-only, one thread's comments at a time. A position names the
record's id (and its row when the two differ: a table without Isso's primary key)."""

from __future__ import annotations

import sqlite3

from comments.importers.records import DELETED, HIDDEN, VISIBLE, Skipped, SourceComment, SourceError, SourceThread, parse_time

_MODES = {1: VISIBLE, 2: HIDDEN, 4: DELETED}


def _position(row, cid) -> str:
    """Where a record is: its id, which is its row in Isso's schema (`id INTEGER PRIMARY KEY`);
    in a file whose table lacks that key (merged, repaired by hand) two records may share an id,
    and the row tells them apart."""
    return f"comments id {cid}" if row == cid else f"comments row {row} (id {cid})"


def read(source, **options):
    try:
        connection = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
        connection.execute("SELECT id, uri, title FROM threads LIMIT 1").fetchall()
        connection.execute("SELECT tid, id, parent, created, modified, mode, text, author, email, likes "
                           "FROM comments LIMIT 1").fetchall()
    except sqlite3.Error as exc:
        raise SourceError(str(source), f"not an Isso database ({exc})") from None
    try:
        threads = connection.execute("SELECT id, uri, title FROM threads ORDER BY id")
        for tid, uri, title in threads.fetchall():  # threads are few; their comments are streamed
            yield SourceThread(key=str(tid), url=str(uri or ""), title=str(title or ""), position=f"threads id {tid}")
            rows = connection.execute("SELECT rowid, id, parent, created, modified, mode, text, author, email, likes "
                                      "FROM comments WHERE tid = ? ORDER BY id, rowid", (tid,))
            while batch := rows.fetchmany(1000):
                for row, cid, parent, created, modified, mode, text, author, email, likes in batch:
                    position = _position(row, cid)
                    try:
                        posted = parse_time(created, position)
                        edited = parse_time(modified, position) if modified else None
                    except SourceError as exc:
                        yield Skipped(position, exc.message)
                        continue
                    yield SourceComment(
                        id=str(cid), thread=str(tid), posted=posted, text=str(text or ""), position=position,
                        parent=str(parent) if parent is not None else None, name=str(author or ""),
                        email=str(email or ""), status=_MODES.get(mode, HIDDEN),
                        likes=int(likes or 0) if isinstance(likes, int) else 0, edited=edited,
                    )
    except sqlite3.Error as exc:
        raise SourceError(str(source), f"cannot be read ({exc})") from None
    finally:
        connection.close()
