"""Remark42 backup (`backup` / the automatic backups, gunzipped): JSON Lines whose first line is
`{"version": 1, "users": [...], "posts": [...]}` and every other line one comment: id, pid
(parent, "" for none), text (HTML), orig (the Markdown it was written in), user {id, name},
locator {site, url}, score, votes {user id: true|false}, time (RFC 3339, nanoseconds), edit
{time}, pin, delete, title. Likes are the up-votes. Remark42 keeps no e-mail: its authors are
guests. A deleted comment is a tombstone."""

from __future__ import annotations

from comments.importers.formats.jsonstream import lines
from comments.importers.records import DELETED, VISIBLE, Skipped, SourceComment, SourceError, SourceThread, parse_time


def read(source, **options):
    threads: set[str] = set()
    for number, record in lines(source):
        if isinstance(record, Skipped):  # a line over the size of a record, read and forgotten
            yield record
            continue
        position = f"line {number}"
        if not isinstance(record, dict):
            yield Skipped(position, "not a JSON object")
            continue
        if "version" in record and "id" not in record:
            if record.get("version") not in (0, 1):
                raise SourceError(position, f"unknown Remark42 backup version {record.get('version')!r}")
            continue
        locator, user = record.get("locator"), record.get("user") or {}
        url = locator.get("url") if isinstance(locator, dict) else None
        source_id = record.get("id")
        if not isinstance(source_id, str) or not source_id or not isinstance(url, str) or not url:
            yield Skipped(position, "a comment without id or locator.url")
            continue
        if url not in threads:
            threads.add(url)
            yield SourceThread(key=url, url=url, title=str(record.get("title") or ""), position=position)
        try:
            posted = parse_time(record.get("time"), position)
            edit = record.get("edit")
            edited = parse_time(edit.get("time"), position) if isinstance(edit, dict) and edit.get("time") else None
        except SourceError as exc:
            yield Skipped(position, f"comment {source_id}: {exc.message}")
            continue
        votes = record.get("votes") if isinstance(record.get("votes"), dict) else {}
        orig = record.get("orig")
        yield SourceComment(
            id=source_id, thread=url, posted=posted, position=position,
            text=orig if isinstance(orig, str) and orig else str(record.get("text") or ""),
            is_html=not (isinstance(orig, str) and orig), parent=record.get("pid") or None,
            name=str(user.get("name") or "") if isinstance(user, dict) else "",
            status=DELETED if record.get("delete") is True else VISIBLE,
            likes=sum(1 for v in votes.values() if v is True), edited=edited,
        )
