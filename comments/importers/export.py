"""`comments_export`: every comment of the site, or of one topic, as JSON Lines or Disqus XML.

Read through each topic's storage manager in chronological pages (`seq` order, whatever the
strategy), unmasked: every status is written (a tombstone as status "deleted" with no text),
so an export imported into an empty site (`comments_import jsonl`) gives back the same threads,
ids, texts, authors, times, statuses and like counts. One page at a time is held in memory.

Privacy: an export carries usernames and guest names, never e-mail addresses, unless
`with_emails` (the operator moving a site to another server wants authors matched there by
e-mail), and then only addresses their owners confirmed. Likers, IP addresses and revisions are never exported.

Every link is absolute on settings.SITE_URL (the site's one configured address): a topic's
`url`, the Disqus `<link>`, and the site's own links inside a message (a mention's `/u/name/`).

JSON Lines, one comment a line (the fields `comments.importers.formats.jsonl` reads):
    {"topic": {"slug", "url", "title", "status", "publish_at"}, "id", "parent",
     "author": {"username"} | {"guest"}, "email"?, "text", "posted", "edited", "status", "likes"}
(the topic's `status` is `draft` or `published`, `publish_at` its scheduled time or null: a row
of a draft or a scheduled topic says so).
Disqus XML: a <thread> per topic (dsq:id its primary key, <id> its slug, <link> its URL), then a
<post> per comment (dsq:id "<topic pk>-<comment id>", <message> its rendered html, isDeleted for
a tombstone, isSpam for a removed or hidden comment: Disqus has no other status).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from django.conf import settings

from accounts.selectors import verified_emails_of
from comments.managers.base import AUTHOR_ONLY, DELETED, REMOVED
from comments.services import comment_manager, is_threaded
from core.paging import PageRequest

PAGE = 100


@dataclass
class ExportReport:
    topics: int = 0
    comments: int = 0


def _time(moment) -> str | None:
    if moment is None:
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _comments(topic):
    """The topic's comments in posting order, one chronological page at a time."""
    manager, threaded, number = comment_manager(topic), is_threaded(topic), 1
    while True:
        page = manager.stored_page(discussion_id=topic.discussion_id, request=PageRequest(page=number, page_size=PAGE),
                                   threaded=threaded)
        yield page.items
        if not page.items or number >= page.num_pages:
            return
        number += 1


def _emails(comments, with_emails: bool) -> dict[int, str]:
    if not with_emails:
        return {}
    # Confirmed addresses only: another account may have typed an owner's address and never
    # confirmed it, and the import on the other site would credit its comments to the owner.
    return verified_emails_of(c.author.id for c in comments if c.author is not None and c.author.id is not None)


def _url(topic) -> str:
    return settings.SITE_URL.rstrip("/") + topic.get_absolute_url()


_SITE_PATH = re.compile(r'(href|src)="/(?!/)')


def _absolute(html: str) -> str:
    """A comment's html with the site's own links (`/u/alice/` of a mention) made absolute on
    settings.SITE_URL: an export is read elsewhere, where a path means another site."""
    return _SITE_PATH.sub(lambda m: f'{m.group(1)}="{settings.SITE_URL.rstrip("/")}/', html)


def comments_export(*, topics, out, fmt: str = "jsonl", with_emails: bool = False,
                    progress=lambda message: None) -> ExportReport:
    """Write the comments of `topics` (an iterable, consumed twice for Disqus) to the text stream `out`."""
    if fmt == "disqus":
        return _disqus(list(topics), out, with_emails, progress)
    report = ExportReport()
    for topic in topics:
        head = {"slug": topic.slug, "url": _url(topic), "title": topic.title, "status": topic.status,
                "publish_at": _time(topic.publish_at)}
        count = 0
        for page in _comments(topic):
            emails = _emails(page, with_emails)
            for c in page:
                line = {"topic": head, "id": c.id, "parent": c.parent,
                        "author": {"guest": c.author.name} if c.author.guest else {"username": c.author.name},
                        "text": c.text, "posted": _time(c.posted), "edited": _time(c.edited), "status": c.status,
                        "likes": c.likes}
                if emails.get(c.author.id):
                    line["email"] = emails[c.author.id]
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
                count += 1
        report.topics += 1
        report.comments += count
        progress(f"{topic.slug}: {count} comments")
    return report


def _disqus(topics, out, with_emails, progress) -> ExportReport:
    report = ExportReport()
    out.write('<?xml version="1.0" encoding="utf-8"?>\n<disqus xmlns="http://disqus.com" '
              'xmlns:dsq="http://disqus.com/disqus-internals">\n')
    for topic in topics:
        out.write(f'  <thread dsq:id="{topic.pk}"><id>{escape(topic.slug)}</id><link>{escape(_url(topic))}</link>'
                  f'<title>{escape(topic.title)}</title><createdAt>{_time(topic.created)}</createdAt>'
                  f'<isClosed>false</isClosed><isDeleted>false</isDeleted></thread>\n')
    for topic in topics:
        count = 0
        for page in _comments(topic):
            emails = _emails(page, with_emails)
            for c in page:
                guest = c.author.guest
                parent = f'<parent dsq:id={quoteattr(f"{topic.pk}-{c.parent}")}/>' if c.parent else ""
                message = "" if c.status == DELETED else _absolute(c.html or escape(c.text))
                email = escape(emails.get(c.author.id, "")) if not guest else ""
                out.write(
                    f'  <post dsq:id={quoteattr(f"{topic.pk}-{c.id}")}><id/><message>{escape(message)}</message>'
                    f'<createdAt>{_time(c.posted)}</createdAt>'
                    f'<isDeleted>{"true" if c.status == DELETED else "false"}</isDeleted>'
                    f'<isSpam>{"true" if c.status in (REMOVED, AUTHOR_ONLY) else "false"}</isSpam>'
                    f'<author><email>{email}</email><name>{escape(c.author.name)}</name>'
                    f'<isAnonymous>{"true" if guest else "false"}</isAnonymous>'
                    f'{"" if guest else f"<username>{escape(c.author.name)}</username>"}</author>'
                    f'<thread dsq:id="{topic.pk}"/>{parent}</post>\n')
                count += 1
        report.topics += 1
        report.comments += count
        progress(f"{topic.slug}: {count} comments")
    out.write("</disqus>\n")
    return report
