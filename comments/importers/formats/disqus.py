"""Disqus XML export (Admin > Moderation > Export): `<disqus>` holding `<category>`, `<thread
dsq:id>` (link, title, id = the site's identifier, createdAt) and `<post dsq:id>` (message as
HTML, createdAt, isDeleted, isSpam, author name/email/username, `<thread dsq:id>`, `<parent
dsq:id>`) elements, all children of the root; posts usually follow the threads. Disqus exports
no likes. A deleted post becomes a tombstone, a spam post a removed comment."""

from __future__ import annotations

from comments.importers.formats.xmlstream import records
from comments.importers.records import (
    DELETED,
    REMOVED,
    VISIBLE,
    Skipped,
    SourceComment,
    SourceError,
    SourceThread,
    parse_time,
    too_large,
)


def _true(value: str) -> bool:
    return value.strip().lower() == "true"


def read(source, **options):
    for node in records(source, root="disqus", depth=2, tags={"thread", "post"}, what="a Disqus export"):
        position = f"line {node.line}"
        over = node.over_cap()
        if over is not None:  # its text was not kept (xmlstream's cap): name it and go on
            size, tag = over
            what = f"post {node.attrs.get('id', '?')} of thread {node.attr('thread', 'id') or '?'}" \
                if node.tag == "post" else f"thread {node.attrs.get('id', '?')}"
            yield Skipped(position, f"{what}: {too_large(size, f'<{tag}>')}")
            continue
        if node.tag == "thread":
            key = node.attrs.get("id", "").strip()
            if not key:
                yield Skipped(position, "a <thread> without dsq:id")
                continue
            yield SourceThread(key=key, url=node.get("link"), identifier=node.get("id"), title=node.get("title"),
                               position=position)
            continue
        source_id = node.attrs.get("id", "").strip() or node.get("id")
        thread = node.attr("thread", "id")
        if not source_id or not thread:
            yield Skipped(position, "a <post> without dsq:id or without its <thread dsq:id>")
            continue
        try:
            posted = parse_time(node.get("createdAt"), position)
        except SourceError as exc:
            yield Skipped(position, f"post {source_id}: {exc.message}")
            continue
        status = DELETED if _true(node.get("isDeleted")) else REMOVED if _true(node.get("isSpam")) else VISIBLE
        yield SourceComment(
            id=source_id, thread=thread, posted=posted, text=node.get("message"), is_html=True, position=position,
            parent=node.attr("parent", "id") or None, name=node.get("author/name") or node.get("author/username"),
            email=node.get("author/email"), status=status,
        )
