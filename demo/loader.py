"""Demo content for `make run`: people here; topics, the social graph, comments and the
moderation queue come from `topics.demo`, `social.demo`, `comments.demo` and `moderation.demo`,
called in order by `load_demo`.

Every step is idempotent: rows are got-or-created, and MongoDB content is loaded only
where MongoDB has none. The demo's acting people are those who may write: a demo person
an editor banned (or whose account is inactive) keeps their account and is left out of
what the steps post, like and follow. The embedded engine keeps its data in its file across restarts,
so a restart loads nothing again and permalinks stay.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password

from core.errors import ServiceError
from core.writers import require_writer

DEMO_PASSWORD = settings.DEMO_PASSWORD  # the demo users' password (settings: one value for every app's demo)
PEOPLE = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"]


@dataclass
class DemoContext:
    editor: object
    people: list = field(default_factory=list)
    topics: list = field(default_factory=list)


def load_people(out) -> DemoContext:
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
    people, barred = [], []
    for person in User.objects.filter(username__in=PEOPLE).order_by("username"):
        (people if _may_write(person) else barred).append(person)
    out(f"people: editor (staff) and {len(people)} visitors, password {DEMO_PASSWORD!r}"
        + (f"; left out (may not write): {', '.join(p.username for p in barred)}" if barred else ""))
    return DemoContext(editor=editor, people=people)


def _may_write(user) -> bool:
    try:
        require_writer(user, "take part in the demo")
    except ServiceError:
        return False
    return True


# App steps, in order: topics, then the graph, so later comments reach followers' feeds.
APP_STEPS = ["topics.demo", "social.demo", "comments.demo", "moderation.demo"]


def load_demo(out=print) -> DemoContext:
    ctx = load_people(out)
    for module_name in APP_STEPS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        module.load(ctx, out)
    return ctx
