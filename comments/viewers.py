"""What another app tells the comment pages about a viewer, without the comments app importing
it: whom the viewer muted (their comments collapse). The social app, which owns mutes and
depends on comments, registers the answer in its `AppConfig.ready()`; with no provider nobody
is muted."""

from __future__ import annotations

from collections.abc import Callable

MutedIds = Callable[[object], set[int]]
_providers: dict[str, MutedIds] = {}


def register_muted_ids(name: str, provider: MutedIds) -> None:
    """`provider(user) -> set of user ids` whose comments collapse for `user`. Idempotent by name."""
    _providers[name] = provider


def muted_ids(user) -> set[int]:
    muted: set[int] = set()
    for provider in list(_providers.values()):
        muted |= provider(user)
    return muted
