"""Demo content for `make run`: people and topics here; comments and the social graph
come from `comments.demo` and `social.demo`, called in order by `load_demo`.

Every step is idempotent: rows are got-or-created, and MongoDB content is loaded only
where MongoDB has none (the embedded engine forgets everything on restart while the
SQLite database keeps its rows, so a restart reloads the MongoDB side).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password

from cms_site.models import CommentOrder, CommentStorage, Topic

DEMO_PASSWORD = "commons-demo"
PEOPLE = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"]

TOPICS = [
    ("Welcome to Commons", CommentStorage.DOCUMENT, CommentOrder.THREADED,
     "Every comment here is its own MongoDB document. Threads sort by full_slug, a path of time-stamped slugs."),
    ("Release notes, in order", CommentStorage.DOCUMENT, CommentOrder.CHRONOLOGICAL,
     "One document per comment, shown in posting order, sorted by (posted, _id)."),
    ("A small discussion, all in one document", CommentStorage.EMBEDDED, CommentOrder.THREADED,
     "All comments live inside one discussion document, nested replies and all."),
    ("Guest book", CommentStorage.EMBEDDED, CommentOrder.CHRONOLOGICAL,
     "Embedded comments pushed onto one array and paged with $slice."),
    ("The busiest thread on the site", CommentStorage.BUCKETED, CommentOrder.CHRONOLOGICAL,
     "Comments are grouped in buckets of about a hundred: a page reads only the buckets it needs."),
]


@dataclass
class DemoContext:
    editor: object
    people: list = field(default_factory=list)
    topics: list = field(default_factory=list)


def _people(out) -> DemoContext:
    User = get_user_model()
    editor, created = User.objects.get_or_create(
        username="editor", defaults={"is_staff": True, "is_superuser": True, "email": "editor@example.com"}
    )
    if created:
        editor.set_password(DEMO_PASSWORD)
        editor.save()
    password = make_password(DEMO_PASSWORD)
    existing = set(User.objects.filter(username__in=PEOPLE).values_list("username", flat=True))
    User.objects.bulk_create([User(username=name, password=password) for name in PEOPLE if name not in existing])
    people = list(User.objects.filter(username__in=PEOPLE).order_by("username"))
    out(f"people: editor (staff) and {len(people)} visitors, password {DEMO_PASSWORD!r}")
    return DemoContext(editor=editor, people=people)


def _topics(ctx: DemoContext, out) -> None:
    from django.utils.text import slugify

    for title, storage, order, body in TOPICS:
        topic, _ = Topic.objects.get_or_create(
            slug=slugify(title),
            defaults={"title": title, "body": body, "author": ctx.editor,
                      "comment_storage": storage, "comment_order": order},
        )
        ctx.topics.append(topic)
    out(f"topics: {len(ctx.topics)} ({', '.join(sorted({t.comment_storage for t in ctx.topics}))})")


# App steps, in order: the graph first, so later comments reach followers' feeds.
APP_STEPS = ["social.demo", "comments.demo"]


def load_demo(out=print) -> DemoContext:
    ctx = _people(out)
    _topics(ctx, out)
    for module_name in APP_STEPS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        module.load(ctx, out)
    return ctx
