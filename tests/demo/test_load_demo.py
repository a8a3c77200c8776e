"""`manage.py load_demo` on a site where an editor banned a demo person: it runs again (and
on a store with no comments yet) without tripping over the ban."""

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from demo.loader import PEOPLE
from moderation import services as moderation

pytestmark = pytest.mark.django_db


def _load() -> str:
    out = StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def _ban(name: str) -> None:
    editor = get_user_model().objects.get(username="editor")
    moderation.ban_create(username=name, moderator=editor, reason="demo ban")


def test_load_demo_again_after_a_demo_person_is_banned():
    assert "Demo content ready." in _load()
    _ban(PEOPLE[-1])  # heidi: the demo's held submission is hers
    _ban(PEOPLE[0])
    assert "Demo content ready." in _load()


def test_load_demo_on_an_empty_store_when_a_demo_person_is_banned():
    # The bans live in the Django database and the comments in MongoDB: a store emptied
    # (a new MONGODB_URI, the embedded file removed) meets the bans of the people table.
    from demo.loader import load_people

    load_people(lambda line: None)
    _ban(PEOPLE[-1])
    _ban(PEOPLE[0])
    output = _load()
    assert "Demo content ready." in output
    assert f"left out (may not write): {PEOPLE[0]}, {PEOPLE[-1]}" in output
