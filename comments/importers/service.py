"""`comments_import`: bring another system's comments into Commons, topic by topic.

Two phases, so that memory stays bounded whatever the size of the source and no topic is
left half-imported:

1. Stage. The reader streams the source; threads and comments go into a staging collection
   (`CommentImportManager`) in batches, keyed by their source ids (a second record with an id
   already seen is reported as a duplicate with its position, the first one is kept). A source
   that cannot be read on (broken XML, a line that is not JSON) stops here, before anything is
   written to a topic: the error names the position.
2. Write, one thread at a time. The thread is matched to a topic (the import map, then its
   slug, a former slug, the `/t/<slug>/` or last path segment of its URL, or the primary key of
   a dump of this site) or created as a draft. Its comments are read back in posting order
   (time, then source order) in chunks; each chunk is entered in the import map (not done),
   rendered (one query for its @names), written through the topic's storage manager
   (`append`: the next `seq`, counters and hints as a post leaves them), given its search
   entries (the `comments_imported` signal: no feed activity, no notification, no credits) and
   marked done. A comment whose parent comes later in time waits for it and follows it; one
   whose parent is not in the source becomes a top-level comment (a warning with its position).

Idempotent and resumable: a comment whose source id is in the map as done is skipped; one
entered but not marked done (an interrupted run) is looked up by its id and stored if missing,
with the same id and placement. Running the same import again after an interruption completes
the topic it stopped in; running it after a complete run imports nothing.

Authors: a user who confirmed the source's e-mail address (a verified allauth `EmailAddress`,
case-insensitive, exactly one such active user) is the author; our own JSON Lines export also
matches by username. Everyone else is a guest author: the name only, no account (`Author.id`
None). See docs/import.md.
"""

from __future__ import annotations

import re
import secrets
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from itertools import groupby
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils.text import slugify

from accounts.selectors import users_with_verified_email
from comments import signals
from comments.ids import new_comment_id
from comments.importers.formats import READERS
from comments.importers.htmltext import html_to_markdown
from comments.importers.records import (
    DELETED,
    MAX_RECORD_BYTES,
    VISIBLE,
    CommentPatch,
    Skipped,
    SourceComment,
    SourceError,
    SourceThread,
    too_large,
)
from comments.managers.base import Author, Comment, DiscussionFull, DuplicateComment
from comments.managers.fields import place
from comments.managers.imports import CommentImportManager
from comments.managers.statuses import CommentStatusIndexManager
from comments.moves import refuse_while_moving
from comments.services import comment_manager, comment_render_many, is_threaded
from core.errors import InvalidInput
from core.text import text_clean, visible_strip

STAGE_BATCH = 1000
CHUNK = 200
PLACED_CACHE = 50_000  # placements of recent comments kept in memory; older parents are read from the map
MAX_ERRORS_KEPT = 1000
GUEST_NAME = "guest"


@dataclass
class ImportReport:
    format: str = ""
    dry_run: bool = False
    read: int = 0  # comment records read from the source
    threads: int = 0
    topics_matched: int = 0
    topics_created: int = 0
    imported: int = 0
    already: int = 0  # imported by an earlier run (or present with the same id): skipped
    duplicates: int = 0
    skipped: int = 0  # records read but not importable (no date, a pingback, bad text...)
    matched_authors: int = 0
    guests: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)  # (position, message), the first MAX_ERRORS_KEPT
    warnings: list[tuple[str, str]] = field(default_factory=list)

    def problem(self, position: str, message: str) -> None:
        if len(self.problems) < MAX_ERRORS_KEPT:
            self.problems.append((position, message))

    def warn(self, position: str, message: str) -> None:
        if len(self.warnings) < MAX_ERRORS_KEPT:
            self.warnings.append((position, message))


class ImportFailed(Exception):
    """The source could not be read: nothing was written to any topic."""

    def __init__(self, error: SourceError, report: ImportReport):
        super().__init__(str(error))
        self.error = error
        self.report = report


@dataclass(frozen=True)
class _Placed:
    comment_id: str
    parent: str | None
    path: str
    depth: int
    sort_key: str
    posted: object
    name: str
    guest: bool = False

    def as_parent(self, discussion_id: int) -> Comment:
        return Comment(id=self.comment_id, discussion_id=discussion_id, parent=self.parent, path=self.path,
                       depth=self.depth, sort_key=self.sort_key, author=Author(id=None if self.guest else 0, name=self.name),
                       text="", posted=self.posted)


def comments_import(*, fmt: str, source, editor=None, storage: str = "document", order: str | None = None,
                    dry_run: bool = False, database: str | None = None, every: int = 1000,
                    progress=lambda message: None) -> ImportReport:
    """Import `source` (a path) in format `fmt` (see READERS). `editor` authors the draft topics
    created for unmatched threads (with `storage` and `order`). Raises ImportFailed when the source
    cannot be read (nothing written to topics), InvalidInput for bad arguments."""
    if fmt not in READERS:
        raise InvalidInput(f"format must be one of {', '.join(READERS)}.", field="format")
    report = ImportReport(format=fmt, dry_run=dry_run)
    staging = CommentImportManager()
    run = secrets.token_hex(6)
    try:
        try:
            _stage(fmt, source, database, run, staging, report, every, progress)
        except SourceError as exc:
            raise ImportFailed(exc, report) from None
        progress(f"staged {report.read} comments in {report.threads} threads; writing")
        writer = _Writer(fmt=fmt, run=run, staging=staging, report=report, editor=editor, storage=storage,
                         order=order, dry_run=dry_run, every=every, progress=progress)
        for key, docs in groupby(staging.staged_comments(run), key=lambda doc: doc["t"]):
            thread = staging.staged_thread(run, key)
            if thread is None:
                report.warn(f"thread {key}", "comments of a thread the source does not describe: a topic is made for it")
                thread = {"key": key, "title": f"Thread {key}"}
            writer.thread(thread, docs)
    finally:
        staging.drop_run(run)
    return report


# --- phase 1: stage ------------------------------------------------------------------


def _stage(fmt, source, database, run, staging: CommentImportManager, report: ImportReport, every, progress):
    batch: list[dict] = []
    patches: list[dict] = []
    threads: set[str] = set()
    ordinal = 0

    def flush():
        for doc in staging.stage_comments(run, batch):
            report.duplicates += 1
            report.problem(doc["pos"], f"duplicate comment id {doc['sid']!r}: the first one is kept")
        batch.clear()

    for record in READERS[fmt](source, database=database):
        ordinal += 1
        if isinstance(record, SourceComment):
            report.read += 1
            size = _size(record.text, record.name, record.email, record.username)
            if size > MAX_RECORD_BYTES:  # a reader without a cap of its own (a database): never staged
                report.skipped += 1
                report.problem(record.position, f"comment {record.id!r}: {too_large(size)}")
                continue
            batch.append({"sid": record.id, "t": record.thread, "p": record.posted, "n": ordinal, "pos": record.position,
                          "parent": record.parent, "name": record.name, "email": record.email,
                          "username": record.username, "text": record.text, "html": record.is_html,
                          "status": record.status, "likes": record.likes, "edited": record.edited, "keep": record.keep_id})
            if len(batch) >= STAGE_BATCH:
                flush()
            if every and report.read % every == 0:
                progress(f"read {report.read} comments")
        elif isinstance(record, SourceThread):
            if record.key not in threads:
                threads.add(record.key)
                report.threads += 1
            staging.stage_thread(run, {"key": record.key, "url": record.url, "slug": record.slug, "title": record.title,
                                       "identifier": record.identifier, "pk": record.pk, "pos": record.position})
        elif isinstance(record, CommentPatch):
            patches.append({"n": ordinal, "sid": record.id, "parent": record.parent, "likes": record.likes,
                            "pos": record.position})
            if len(patches) >= STAGE_BATCH:
                staging.stage_patches(run, patches)
                patches.clear()
        elif isinstance(record, Skipped):
            report.skipped += 1
            report.problem(record.position, record.reason)
    flush()
    staging.stage_patches(run, patches)
    for patch in staging.apply_patches(run):
        report.warn(patch["pos"], f"refers to comment {patch['sid']!r}, which is not in the source")


def _size(*texts) -> int:
    """UTF-8 bytes of `texts` (strings, or anything a reader left there)."""
    return sum((len(t) if t.isascii() else len(t.encode("utf-8", "surrogatepass"))) if isinstance(t, str) else 0
               for t in texts)


# --- phase 2: write, thread by thread -----------------------------------------------------


_TOPIC_PATH = re.compile(r"/t/([A-Za-z0-9_-]+)/?")


def _given_slug(value) -> str:
    """`value` as a slug when it is one (not an identifier such as "123 https://...?p=123"), else ''."""
    given = (value or "").strip()
    return given.lower()[:220] if given and slugify(given) == given.lower() else ""


def _candidate_slugs(thread: dict) -> list[str]:
    """The slugs of this site's topic a thread may be: its own slug, its identifier, the `/t/<slug>/`
    of its URL, the URL's last path segment."""
    slugs = [_given_slug(thread.get("slug")), _given_slug(thread.get("identifier"))]
    path = urlsplit(thread.get("url") or "").path
    match = _TOPIC_PATH.search(path)
    if match:
        slugs.append(match.group(1))
    segments = [s for s in path.split("/") if s]
    if segments:
        last = re.sub(r"\.(html?|php|aspx?)\Z", "", segments[-1], flags=re.I)
        slugs.append(slugify(last)[:220])
    return [s for s in dict.fromkeys(slugs) if s]


class _Writer:
    def __init__(self, *, fmt, run, staging: CommentImportManager, report: ImportReport, editor, storage, order,
                 dry_run, every, progress):
        self.fmt, self.run, self.staging, self.report = fmt, run, staging, report
        self.editor, self.storage, self.order = editor, storage, order
        self.dry_run, self.every, self.progress = dry_run, every, progress
        self.users: OrderedDict[str, tuple[int, str] | None] = OrderedDict()  # e-mail or @username -> (pk, username)
        self.written = 0

    # --- topics ---

    def topic_for(self, thread: dict):
        from topics.models import Topic, TopicSlugRedirect, TopicStatus
        from topics.services import topic_create

        mapped = self.staging.thread_topic(self.fmt, thread["key"])
        topic = Topic.objects.filter(pk=mapped).first() if mapped else None
        if topic is None and thread.get("pk"):
            topic = Topic.objects.filter(pk=thread["pk"]).first()
        candidates = _candidate_slugs(thread)
        if topic is None and candidates:
            topic = Topic.objects.filter(slug__in=candidates).first()
            if topic is None:
                redirect = TopicSlugRedirect.objects.filter(old_slug__in=candidates).select_related("topic").first()
                topic = redirect.topic if redirect else None
        if topic is not None:
            self.report.topics_matched += 1
            if not self.dry_run:
                self.staging.set_thread_topic(self.fmt, thread["key"], topic.pk)
            return topic
        self.report.topics_created += 1
        if self.dry_run:
            return None
        if self.editor is None:
            raise InvalidInput("a thread matches no topic and no editor was given to create it as a draft "
                               "(--editor USERNAME).", field="editor")
        title = (thread.get("title") or thread.get("url") or thread["key"]).strip()[:200] or thread["key"][:200]
        # The source's own slug (our export's, WordPress's post_name) when free; else topic_create makes a
        # unique one from the title (from the URL's last segment for a thread without a title). A Disqus
        # identifier only matches: it is the source's key for the page, no name for it.
        slug = _given_slug(thread.get("slug")) or None
        if slug is None and not (thread.get("title") or "").strip():
            slug = next((c for c in candidates if c != _given_slug(thread.get("identifier"))), None)
        if slug and (Topic.objects.filter(slug=slug).exists() or TopicSlugRedirect.objects.filter(old_slug=slug).exists()):
            slug = None
        topic = topic_create(author=self.editor, title=title, slug=slug, status=TopicStatus.DRAFT,
                             comment_storage=self.storage, comment_order=self.order)
        self.staging.set_thread_topic(self.fmt, thread["key"], topic.pk)
        return topic

    # --- authors ---

    def authors(self, docs: list[dict]) -> None:
        """Fill the user cache for the e-mails and usernames of `docs` (at most two queries). An e-mail
        matches only an address its user confirmed (allauth's verified `EmailAddress`), never the
        user row's `email`: anyone can type an address into a sign-up form."""
        User = get_user_model()
        emails = {d["email"].strip().lower() for d in docs if d.get("email")} - set(self.users)
        if emails:
            found = users_with_verified_email(emails)
            for email in emails:
                matches = found.get(email, [])
                self._remember(email, matches[0] if len(matches) == 1 else None)  # two users, one e-mail: nobody
        names = {"@" + d["username"] for d in docs if d.get("username")} - set(self.users)
        if names:
            rows = dict(User.objects.filter(is_active=True, username__in=[n[1:] for n in names]).values_list("username", "pk"))
            for name in names:
                pk = rows.get(name[1:])
                self._remember(name, (pk, name[1:]) if pk is not None else None)

    def _remember(self, key, value):
        self.users[key] = value
        while len(self.users) > PLACED_CACHE:
            self.users.popitem(last=False)

    def author_of(self, doc: dict) -> Author:
        user = None
        if doc.get("username"):
            user = self.users.get("@" + doc["username"])
        if user is None and doc.get("email"):
            user = self.users.get(doc["email"].strip().lower())
        if user is not None:
            self.report.matched_authors += 1
            return Author(id=user[0], name=user[1])
        self.report.guests += 1
        # A name that shows nothing (Hangul fillers, variation selectors: core.text's rules) is no name.
        name = visible_strip(" ".join(str(doc.get("name") or "").split()))[:150] or GUEST_NAME
        return Author(id=None, name=name)

    # --- one thread ---

    def thread(self, thread: dict, docs) -> None:
        """Write one thread's staged comments (`docs`, in posting order)."""
        report = self.report
        before = (report.imported, report.already)
        topic = self.topic_for(thread)
        if topic is not None and not self.dry_run:
            refuse_while_moving(topic)  # before anything of this thread is written
        manager = comment_manager(topic) if topic is not None else None
        threaded = is_threaded(topic) if topic is not None else False
        # Comments appended after the discussion's own take their place by their time afterwards
        # (order_by_time): only needed where the discussion had comments before this thread's.
        had = manager.count(discussion_id=topic.pk) if manager is not None and not self.dry_run else 0
        placed: OrderedDict[str, _Placed] = OrderedDict()
        waiting: dict[str, list[dict]] = {}  # parent source id -> replies read before it
        chunk: list[dict] = []
        state = {"full": False}

        def flush():
            if chunk:
                if topic is not None and not self.dry_run:
                    refuse_while_moving(topic)  # a move that started since: its copy has what is written
                self.write_chunk(topic, manager, threaded, chunk, placed, waiting, state)
                chunk.clear()

        for doc in docs:
            chunk.append(doc)
            if len(chunk) >= CHUNK:
                flush()
        flush()
        for parent, replies in waiting.items():  # parents never seen: the replies become top-level comments
            for doc in replies:
                report.warn(doc["pos"], f"comment {doc['sid']!r} answers {parent!r}, which is not in this thread or was "
                                        "not imported: imported as a top-level comment")
                doc["parent"] = None
                chunk.append(doc)
        waiting.clear()
        flush()
        # Also when this run imported nothing new but found comments an earlier run wrote (one a move
        # stopped before it ordered them); a discussion already in order is read, not written.
        if had and (report.imported > before[0] or report.already > before[1]):
            refuse_while_moving(topic)
            manager.order_by_time(discussion_id=topic.pk, threaded=threaded)
        self.progress(f"thread {thread['key']} -> topic {topic.slug if topic else '(a new draft)'}: "
                      f"{report.imported - before[0]} imported, {report.already - before[1]} already there")

    def write_chunk(self, topic, manager, threaded, docs, placed, waiting, state) -> None:
        report = self.report
        if state["full"]:
            report.skipped += len(docs)
            return
        discussion_id = topic.pk if topic is not None else 0
        # Entries of another discussion are stale (its topic was deleted since): imported again here,
        # and a dry run counts them so (a topic it would create has no entries: discussion_id 0).
        known = {sid: entry for sid, entry in self.staging.entries(self.fmt, [d["sid"] for d in docs]).items()
                 if entry.get("d") == discussion_id}
        parents_needed = {d["parent"] for d in docs if d.get("parent") and d["parent"] not in placed}
        if parents_needed:
            for sid, entry in self.staging.entries(self.fmt, parents_needed).items():
                if entry.get("c") and entry.get("d") == discussion_id:
                    self._place(placed, sid, _Placed(entry["c"], entry.get("parent"), entry["path"], entry["depth"],
                                                     entry["sort_key"], entry["posted"], entry.get("name", ""),
                                                     entry.get("guest", False)))
        self.authors(docs)
        plan: list[tuple[dict, Comment, bool]] = []  # (doc, comment, recovering)

        for doc in docs:
            doc["_entry"] = known.get(doc["sid"])  # kept with the doc: a reply may wait for its parent's chunk

        def take(doc):
            entry = doc["_entry"]
            if entry is not None and entry.get("done"):
                report.already += 1
                self._place(placed, doc["sid"], _Placed(entry["c"], entry.get("parent"), entry["path"], entry["depth"],
                                                        entry["sort_key"], entry["posted"], entry.get("name", ""),
                                                        entry.get("guest", False)))
                release(doc)
                return
            parent_sid = doc.get("parent")
            parent = placed.get(parent_sid) if parent_sid else None
            if parent_sid and parent is None:
                waiting.setdefault(parent_sid, []).append(doc)  # its parent comes later in time: wait for it
                return
            comment = self._build(doc, entry, parent, discussion_id)
            if comment is None:
                return
            plan.append((doc, comment, entry is not None))
            author = comment.author
            self._place(placed, doc["sid"], _Placed(comment.id, comment.parent, comment.path, comment.depth,
                                                    comment.sort_key, comment.posted, author.name, author.guest))
            release(doc)

        def release(doc):
            for reply in waiting.pop(doc["sid"], []):
                mine = placed[doc["sid"]]
                if reply["p"] <= mine.posted:
                    reply["p"] = mine.posted + timedelta(milliseconds=1)  # a reply follows its parent
                take(reply)

        for doc in docs:
            take(doc)
        if not plan:
            return
        if self.dry_run:  # the real run's checks, without its writes: a kept id already stored is "already"
            for doc, comment, recovering in plan:
                if (recovering or doc.get("keep")) and self._stored(topic, manager, threaded, comment):
                    report.already += 1
                else:
                    report.imported += 1
            return
        self._write(topic, manager, threaded, plan, state)

    @staticmethod
    def _stored(topic, manager, threaded, comment) -> bool:
        """Whether the topic holds a comment with this id (an interrupted run stored it, or the
        source is this site's own export)."""
        return topic is not None and manager.get(discussion_id=topic.pk, comment_id=comment.id,
                                                 threaded=threaded) is not None

    def _build(self, doc: dict, entry: dict | None, parent: _Placed | None, discussion_id: int) -> Comment | None:
        report = self.report
        status = doc.get("status") or VISIBLE
        text = doc.get("text") or ""
        if doc.get("html"):
            text = html_to_markdown(text)
        if status == DELETED:
            text = ""
        else:
            try:
                text = text_clean(text, field="text", max_length=settings.COMMENTS_MAX_TEXT)
            except InvalidInput as exc:
                report.skipped += 1
                report.problem(doc["pos"], f"comment {doc['sid']!r}: {exc}")
                return None
        author = self.author_of(doc)
        posted = doc["p"]
        if entry is not None and entry.get("c"):  # an interrupted run entered it: same id, same place
            comment_id = entry["c"]
        elif doc.get("keep"):
            comment_id = doc["sid"].rsplit("/", 1)[-1]
        else:
            comment_id = new_comment_id(12)
        parent_comment = parent.as_parent(discussion_id) if parent is not None else None
        where = place(comment_id=comment_id, posted=posted, parent=parent_comment, max_depth=settings.COMMENTS_MAX_DEPTH)
        return Comment(id=comment_id, discussion_id=discussion_id, parent=where.parent, path=where.path,
                       depth=where.depth, sort_key=where.sort_key, author=author, text=text, posted=posted,
                       status=status, likes=max(0, int(doc.get("likes") or 0)), edited=doc.get("edited"),
                       reply_to=parent.name if parent is not None else None)

    def _write(self, topic, manager, threaded, plan, state) -> None:
        report = self.report
        texts = [c.text for _, c, _ in plan]
        for (_, comment, _), html in zip(plan, comment_render_many(texts=texts), strict=True):
            comment.html = html if comment.text else ""
        self.staging.begin(self.fmt, {doc["sid"]: {
            "d": topic.pk, "c": c.id, "parent": c.parent, "path": c.path, "depth": c.depth, "sort_key": c.sort_key,
            "posted": c.posted, "name": c.author.name, "guest": c.author.guest} for doc, c, _ in plan})
        statuses = CommentStatusIndexManager()
        stored: list[Comment] = []
        done: list[str] = []
        run: list[tuple[dict, Comment]] = []  # new comments, stored together (append_many)

        def record(doc, comment):
            stored.append(comment)
            done.append(doc["sid"])
            report.imported += 1
            self.written += 1
            if self.every and self.written % self.every == 0:
                self.progress(f"imported {self.written} comments")

        def one(doc, comment) -> None:
            if comment.status != VISIBLE:  # the status index first, as moderation writes it
                statuses.set(discussion_id=topic.pk, comment_id=comment.id, status=comment.status)
            try:
                manager.append(comment, threaded=threaded)
            except DiscussionFull:
                report.problem(doc["pos"], f"topic {topic.slug!r} is full ({topic.comment_storage} storage): this and "
                                           "the following comments of its thread were not imported")
                state["full"] = True
                return
            except DuplicateComment:
                report.skipped += 1
                report.problem(doc["pos"], f"comment id {comment.id!r} is taken in topic {topic.slug!r}")
                self.staging.forget(self.fmt, [doc["sid"]])
                return
            record(doc, comment)

        def flush() -> None:
            batch = list(run)
            run.clear()
            if not batch or state["full"]:
                return
            for _, comment in batch:
                if comment.status != VISIBLE:
                    statuses.set(discussion_id=topic.pk, comment_id=comment.id, status=comment.status)
            try:
                stored_count = manager.append_many([c for _, c in batch], threaded=threaded)
            except (DuplicateComment, DiscussionFull) as exc:
                stored_count = getattr(exc, "stored", 0)
            for doc, comment in batch[:stored_count]:
                record(doc, comment)
            for doc, comment in batch[stored_count:]:  # after a refusal: one at a time, each refusal reported
                if not state["full"]:
                    one(doc, comment)

        for doc, comment, recovering in plan:
            if state["full"]:
                break
            if recovering or doc.get("keep"):  # it may be stored already: look it up first
                flush()
                if self._stored(topic, manager, threaded, comment):
                    report.already += 1
                    done.append(doc["sid"])
                    continue
                one(doc, comment)
            else:
                run.append((doc, comment))
        flush()
        if state["full"]:
            finished = set(done)
            rest = [doc["sid"] for doc, _, _ in plan if doc["sid"] not in finished]
            self.staging.forget(self.fmt, rest)
            report.skipped += len(rest)
        if stored:
            signals.comments_imported.send(sender=Comment, topic=topic, comments=stored)
        self.staging.finish(self.fmt, done)

    @staticmethod
    def _place(placed: OrderedDict, sid: str, value: _Placed) -> None:
        placed[sid] = value
        placed.move_to_end(sid)
        while len(placed) > PLACED_CACHE:
            placed.popitem(last=False)


def report_dict(report: ImportReport) -> dict:
    return asdict(report)
