"""django-contrib-comments and django-comments-xtd, from `manage.py dumpdata` (JSON array or
`--format jsonl`) or straight from a Django database alias (`--database ALIAS`).

dumpdata records read here:
- `django_comments.comment`: content_type (natural key ["app", "model"] or an id), object_pk,
  user, user_name, user_email, comment (plain text), submit_date, is_public, is_removed;
- `django_comments_xtd.xtdcomment` (same pk, multi-table inheritance): parent_id (equal to
  its own pk for a top-level comment), thread_id, level, order;
- `django_comments.commentflag` with flag "I liked it" (xtd's like): one like each.
Every other model is passed over. A thread is the commented object (content type and pk):
`topics.topic` objects are this site's topics by primary key; other objects become topics
titled after them. Removed comments are imported removed, non-public ones hidden."""

from __future__ import annotations

from comments.importers.formats.jsonstream import array_or_lines
from comments.importers.records import (
    HIDDEN,
    REMOVED,
    VISIBLE,
    CommentPatch,
    Skipped,
    SourceComment,
    SourceError,
    SourceThread,
    parse_time,
)

COMMENT_MODELS = {"django_comments.comment", "comments.comment"}
XTD_MODELS = {"django_comments_xtd.xtdcomment"}
FLAG_MODELS = {"django_comments.commentflag", "comments.commentflag"}
LIKE_FLAG = "I liked it"
TOPIC_MODELS = {"topics.topic", "cms_site.topic"}


def _content_type(value, known: dict[int, str]) -> str:
    """"app.model" of a natural key, or of a content type id named by the dump's own
    contenttypes.contenttype records (dumpdata without --natural-foreign), else "contenttype<id>"."""
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return f"{value[0]}.{value[1]}".lower()
    if isinstance(value, int) and not isinstance(value, bool):
        return known.get(value, f"contenttype{value}")
    return ""


def thread_of(content_type: str, object_pk) -> SourceThread:
    key = f"{content_type}:{object_pk}"
    pk = int(object_pk) if content_type in TOPIC_MODELS and str(object_pk).isdigit() else None
    return SourceThread(key=key, title=f"{content_type} {object_pk}", slug="", pk=pk)


def comment_of(position: str, pk, thread: str, fields: dict) -> SourceComment:
    text = fields.get("comment")
    if not isinstance(text, str):
        raise SourceError(position, "comment is not text")
    status = REMOVED if fields.get("is_removed") is True else VISIBLE if fields.get("is_public", True) is not False else HIDDEN
    user = fields.get("user")
    name = fields.get("user_name") or (user[0] if isinstance(user, list) and user and isinstance(user[0], str) else "")
    return SourceComment(id=str(pk), thread=thread, posted=parse_time(fields.get("submit_date"), position), text=text,
                         position=position, name=str(name or ""), email=str(fields.get("user_email") or ""),
                         status=status)


def read(source, *, database: str | None = None, **options):
    if database:
        yield from _read_database(database)
        return
    threads: set[str] = set()
    content_types: dict[int, str] = {}  # a dump lists contenttypes before django_comments (alphabetical)
    for position, record in array_or_lines(source):
        if isinstance(record, Skipped):  # a line over the size of a record, read and forgotten
            yield record
            continue
        if not isinstance(record, dict) or not isinstance(record.get("fields"), dict):
            yield Skipped(position, "not a dumpdata record (an object with model, pk, fields)")
            continue
        model, pk, fields = str(record.get("model", "")).lower(), record.get("pk"), record["fields"]
        if model == "contenttypes.contenttype" and isinstance(pk, int):
            content_types[pk] = f"{fields.get('app_label', '')}.{fields.get('model', '')}".lower()
        elif model in COMMENT_MODELS:
            content_type = _content_type(fields.get("content_type"), content_types)
            if pk is None or not content_type or fields.get("object_pk") in (None, ""):
                yield Skipped(position, "a comment without pk, content_type or object_pk")
                continue
            thread = thread_of(content_type, fields["object_pk"])
            if thread.key not in threads:
                threads.add(thread.key)
                thread.position = position
                yield thread
            try:
                yield comment_of(position, pk, thread.key, fields)
            except SourceError as exc:
                yield Skipped(position, f"comment {pk}: {exc.message}")
        elif model in XTD_MODELS and pk is not None:
            parent = fields.get("parent_id")
            if parent is not None and str(parent) != str(pk):
                yield CommentPatch(id=str(pk), position=position, parent=str(parent))
        elif model in FLAG_MODELS and fields.get("flag") == LIKE_FLAG and fields.get("comment") is not None:
            yield CommentPatch(id=str(fields["comment"]), position=position, likes=1)


def _read_database(alias: str):
    """The same records from the tables of a configured Django database (read-only queries,
    streamed with fetchmany): django_comments, django_comments_xtd_xtdcomment when it exists,
    django_comment_flags for likes."""
    from django.db import connections

    connection = connections[alias]
    tables = set(connection.introspection.table_names())
    if "django_comments" not in tables:
        raise SourceError(f"database {alias!r}", "has no django_comments table")
    xtd = "django_comments_xtd_xtdcomment" in tables
    threads: set[str] = set()
    select = ("SELECT c.id, ct.app_label, ct.model, c.object_pk, c.user_name, c.user_email, c.comment, c.submit_date, "
              "c.is_public, c.is_removed" + (", x.parent_id" if xtd else ", NULL") +
              " FROM django_comments c JOIN django_content_type ct ON ct.id = c.content_type_id" +
              (" LEFT JOIN django_comments_xtd_xtdcomment x ON x.comment_ptr_id = c.id" if xtd else "") +
              " ORDER BY c.id")
    with connection.cursor() as cursor:
        cursor.execute(select)
        while rows := cursor.fetchmany(1000):
            for pk, app, model, object_pk, name, email, text, submitted, public, removed, parent in rows:
                position = f"django_comments id {pk}"
                thread = thread_of(f"{app}.{model}".lower(), object_pk)
                if thread.key not in threads:
                    threads.add(thread.key)
                    thread.position = position
                    yield thread
                stamp = submitted.isoformat() if hasattr(submitted, "isoformat") else submitted  # a driver may give text
                fields = {"comment": text, "submit_date": stamp,
                          "is_public": bool(public), "is_removed": bool(removed), "user_name": name, "user_email": email}
                try:
                    comment = comment_of(position, pk, thread.key, fields)
                except SourceError as exc:
                    yield Skipped(position, exc.message)
                    continue
                if parent is not None and parent != pk:
                    comment.parent = str(parent)
                yield comment
    if "django_comment_flags" in tables:
        with connection.cursor() as cursor:
            cursor.execute("SELECT comment_id, COUNT(*) FROM django_comment_flags WHERE flag = %s GROUP BY comment_id",
                           [LIKE_FLAG])
            while rows := cursor.fetchmany(1000):
                for comment_id, count in rows:
                    yield CommentPatch(id=str(comment_id), position=f"django_comment_flags of comment {comment_id}",
                                       likes=int(count))
