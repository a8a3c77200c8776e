"""Django users and topics for the cases, created in bulk in the bench's test database."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password

from comments.managers.base import Author

_serial = 0


def users(n: int, prefix: str = "u", *, staff: bool = False) -> list:
    """`n` new active users (one password hash for all: none of them ever logs in with it)."""
    global _serial
    _serial += 1
    User = get_user_model()
    password = make_password("bench-only-password")
    stem = f"{prefix}{_serial}x"
    for start in range(0, n, 5000):
        batch = [User(username=f"{stem}{i}", password=password, is_staff=staff) for i in range(start, min(n, start + 5000))]
        User.objects.bulk_create(batch, batch_size=1000)
    return list(User.objects.filter(username__startswith=stem).order_by("id"))


def editor():
    return users(1, "editor", staff=True)[0]


def authors(people: list) -> list[Author]:
    return [Author(id=u.pk, name=u.username) for u in people]


def topic(*, author, storage: str, order: str | None = None, title: str | None = None):
    from topics.services import topic_create

    return topic_create(author=author, title=title or f"Bench {storage} {order or ''}", comment_storage=storage,
                        comment_order=order)


def authors_with_followers(counts: list[int], prefix: str, first_id: int) -> list:
    """New users, the i-th followed by `counts[i]` synthetic follower ids numbered from `first_id` on,
    written by the follow lists' own bulk path (FollowListManager.replace: a head and `tbc`
    continuation documents, what appends leave)."""
    from social.managers import FOLLOWERS, FollowListManager

    people = users(len(counts), prefix)
    lists, next_id = {}, first_id
    for person, n in zip(people, counts, strict=True):
        lists[person.pk] = list(range(next_id, next_id + n))
        next_id += n
    FollowListManager().replace(kind=FOLLOWERS, lists=lists)
    return people
