"""WordPress eXtended RSS (Tools > Export): `<rss><channel><item>` per post or page (title, link,
wp:post_id, wp:post_name = its slug) holding its `<wp:comment>` elements (comment_id,
comment_author, comment_author_email, comment_date_gmt, comment_content as HTML,
comment_approved "1" | "0" | "spam" | "trash", comment_parent "0" for none, comment_type
"" | "comment" | "pingback" | "trackback", and wp:commentmeta). One item is held at a time.
Unapproved comments are imported hidden (author_only), spam removed, trash as tombstones;
pingbacks and trackbacks are skipped."""

from __future__ import annotations

import re

from comments.importers.formats.xmlstream import records
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
    too_large,
)


def _autop(content: str) -> str:
    """WordPress stores a comment's line breaks as typed and adds <p>/<br> when showing it (wpautop):
    do the same before reading it as HTML, so paragraphs and line breaks survive."""
    content = re.sub(r"(<br\s*/?>)[ \t]*\n", r"\1", content.replace("\r\n", "\n"), flags=re.I).strip()
    if "<p" in content.lower():
        return content
    paragraphs = [p.strip().replace("\n", "<br />") for p in re.split(r"\n\s*\n", content) if p.strip()]
    return "".join(f"<p>{p}</p>" for p in paragraphs)


_STATUS = {"1": VISIBLE, "approve": VISIBLE, "0": HIDDEN, "hold": HIDDEN, "spam": REMOVED, "trash": DELETED}


def read(source, **options):
    for item in records(source, root="rss", depth=3, tags={"item"}, units={"comment"},
                        what="a WordPress export (WXR)"):
        key = item.get("post_id") or item.get("link") or item.get("guid")
        comments = [c for c in item.children if c.tag == "comment"]
        if not comments:
            continue
        if not key:
            yield Skipped(f"line {item.line}", "an <item> with comments but no wp:post_id or link")
            continue
        yield SourceThread(key=key, url=item.get("link"), slug=item.get("post_name"), title=item.get("title"),
                           position=f"line {item.line}")
        for node in comments:
            position = f"line {node.line}"
            source_id = node.get("comment_id")
            if not source_id:
                yield Skipped(position, "a wp:comment without wp:comment_id")
                continue
            over = node.over_cap()
            if over is not None:  # its text was not kept (xmlstream's cap): name it and go on
                size, tag = over
                yield Skipped(position, f"comment {source_id} of post {key}: {too_large(size, f'<{tag}>')}")
                continue
            if node.get("comment_type") in ("pingback", "trackback"):
                yield Skipped(position, f"comment {source_id} is a {node.get('comment_type')}")
                continue
            date = node.get("comment_date_gmt")
            if not date or date.startswith("0000"):
                date = node.get("comment_date")
            try:
                posted = parse_time(date, position)
            except SourceError as exc:
                yield Skipped(position, f"comment {source_id}: {exc.message}")
                continue
            approved = node.get("comment_approved", "1").lower()
            parent = node.get("comment_parent")
            yield SourceComment(
                id=source_id, thread=key, posted=posted,
                text=_autop(node.get("comment_content")), is_html=True, position=position,
                parent=parent if parent not in ("", "0") else None, name=node.get("comment_author"),
                email=node.get("comment_author_email"), status=_STATUS.get(approved, HIDDEN),
            )
