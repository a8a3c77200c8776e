"""Our own export (`manage.py comments_export --format jsonl`): one comment a line,

    {"topic": {"slug", "url", "title"}, "id", "parent", "author": {"username"} | {"guest": name},
     "email"?, "text", "posted", "edited", "status", "likes"}

Comment ids are kept (permalinks survive a move between sites); authors are matched by
username (by e-mail too when the export carries e-mails), else kept as guests."""

from __future__ import annotations

from comments.ids import is_comment_id
from comments.importers.formats.jsonstream import lines
from comments.importers.records import (
    DELETED,
    HIDDEN,
    REMOVED,
    VISIBLE,
    Skipped,
    SourceComment,
    SourceError,
    SourceThread,
    parse_time,
)

_STATUSES = {VISIBLE, HIDDEN, REMOVED, DELETED}


def read(source, **options):
    threads: set[str] = set()
    for number, record in lines(source):
        if isinstance(record, Skipped):  # a line over the size of a record, read and forgotten
            yield record
            continue
        position = f"line {number}"
        topic = record.get("topic") if isinstance(record, dict) else None
        if not isinstance(topic, dict) or not isinstance(topic.get("slug"), str) or not topic["slug"]:
            yield Skipped(position, "no topic.slug")
            continue
        slug = topic["slug"]
        comment_id, author = record.get("id"), record.get("author")
        if not is_comment_id(comment_id) or not isinstance(author, dict):
            yield Skipped(position, "no comment id (lowercase letters and digits) or no author")
            continue
        if slug not in threads:
            threads.add(slug)
            yield SourceThread(key=slug, slug=slug, url=str(topic.get("url") or ""), title=str(topic.get("title") or ""),
                               position=position)
        parent, status = record.get("parent"), record.get("status", VISIBLE)
        text, likes = record.get("text"), record.get("likes", 0)
        if parent is not None and not is_comment_id(parent) or status not in _STATUSES or not isinstance(text, str) \
                or type(likes) is not int or likes < 0:
            yield Skipped(position, f"comment {comment_id}: a malformed parent, status, text or likes")
            continue
        try:
            posted = parse_time(record.get("posted"), position)
            edited = parse_time(record["edited"], position) if record.get("edited") else None
        except SourceError as exc:
            yield Skipped(position, f"comment {comment_id}: {exc.message}")
            continue
        username = author.get("username") if isinstance(author.get("username"), str) else ""
        guest = author.get("guest") if isinstance(author.get("guest"), str) else ""
        yield SourceComment(
            id=f"{slug}/{comment_id}", thread=slug, posted=posted, text=text, position=position,
            parent=f"{slug}/{parent}" if parent else None, name=username or guest, username=username,
            email=str(record.get("email") or ""), status=status, likes=likes, edited=edited, keep_id=True,
        )
