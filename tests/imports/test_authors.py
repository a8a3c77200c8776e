"""Authors are matched to users by a confirmed e-mail address only: an address typed into a
sign-up form (or set on the user row) and never confirmed claims nobody's history."""

import pytest
from allauth.account.models import EmailAddress

from tests.imports.support import FIXTURES, run_import, shape

pytestmark = pytest.mark.django_db


@pytest.fixture
def topic(make_topic, editor):
    editor.is_superuser = True
    editor.save()
    return make_topic("document", "threaded", title="Existing topic", slug="existing-topic")


def authors(topic) -> list[tuple[str, bool]]:
    """(name, guest?) of each comment the fixture's alice wrote (the first and the last)."""
    comments = shape(topic)
    return [(comments[0][1], comments[0][2]), (comments[-1][1], comments[-1][2])]


def test_an_unconfirmed_address_matches_nobody(topic, make_user):
    alice = make_user("alice", email="alice@example.org")
    EmailAddress.objects.create(user=alice, email="alice@example.org", primary=True, verified=False)
    out = run_import("disqus", FIXTURES / "disqus.xml")
    assert "0 matched to users" in out
    assert authors(topic) == [("Alice A.", True), ("Alice A.", True)]


def test_the_user_rows_email_alone_matches_nobody(topic, make_user):
    make_user("alice", email="alice@example.org")  # no allauth address at all (createsuperuser, the admin)
    run_import("disqus", FIXTURES / "disqus.xml")
    assert authors(topic) == [("Alice A.", True), ("Alice A.", True)]


def test_a_confirmed_address_matches_ignoring_case(topic, make_user):
    alice = make_user("alice", email="old@example.org")  # the row's e-mail differs: the confirmed address counts
    EmailAddress.objects.create(user=alice, email="old@example.org", primary=True, verified=False)
    EmailAddress.objects.create(user=alice, email="ALICE@example.ORG", primary=False, verified=True)
    out = run_import("disqus", FIXTURES / "disqus.xml")
    assert "2 matched to users" in out
    assert authors(topic) == [("alice", False), ("alice", False)]


def test_an_inactive_users_confirmed_address_matches_nobody(topic, make_user):
    alice = make_user("alice", email="alice@example.org", is_active=False)
    EmailAddress.objects.create(user=alice, email="alice@example.org", primary=True, verified=True)
    run_import("disqus", FIXTURES / "disqus.xml")
    assert authors(topic) == [("Alice A.", True), ("Alice A.", True)]
