"""What another app tells the comment pages about a viewer, without the comments app importing
it: whom the viewer muted (their comments collapse), and the viewer's own comments held out of
storage for review (the moderation app's queue): their author reads them back at their id (the
API, the permalink) as the pages show them. The apps that own these (social, moderation), which
depend on comments, register the answers in their `AppConfig.ready()`; with no provider nobody
is muted and nothing is held."""

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


OwnHeld = Callable[..., object]
_held_readers: dict[str, OwnHeld] = {}


def register_held_reader(name: str, reader: OwnHeld) -> None:
    """`reader(*, topic, comment_id, viewer) -> Comment | None`: the viewer's own held comment of
    `topic` with that id (None for anyone else's, or none). Idempotent by name."""
    _held_readers[name] = reader


def own_held(*, topic, comment_id: str, viewer):
    """The viewer's own comment held for review under `comment_id`, as they are shown it (a
    shadow-banned author's as visible), or None. Nobody else's: for every other viewer a held
    id answers as an id that was never used."""
    if viewer is None or not getattr(viewer, "is_authenticated", False):
        return None
    for reader in list(_held_readers.values()):
        found = reader(topic=topic, comment_id=comment_id, viewer=viewer)
        if found is not None:
            return found
    return None


ShadowHeld = Callable[..., list]
_shadow_listers: dict[str, ShadowHeld] = {}


def register_shadow_lister(name: str, lister: ShadowHeld) -> None:
    """`lister(*, topic, viewer) -> [Comment]`: the viewer's own comments of `topic` held by a
    shadow ban, as they are shown them (`visible`), a bounded few. Idempotent by name."""
    _shadow_listers[name] = lister


def own_shadow_held(*, topic, viewer) -> list:
    """The viewer's own shadow-held comments of `topic`, which the comment lists show them in
    place as posted ones (a shadow ban does not show); [] for anonymous viewers and nobody else's."""
    if viewer is None or not getattr(viewer, "is_authenticated", False):
        return []
    found: list = []
    for lister in list(_shadow_listers.values()):
        found.extend(lister(topic=topic, viewer=viewer))
    return found


FollowedIds = Callable[[object], list[int]]
_followed: dict[str, FollowedIds] = {}


def register_followed_ids(name: str, provider: FollowedIds) -> None:
    """`provider(user) -> [user id]`: whom `user` follows (the order "people you follow first"
    and "N people you follow commented"). Idempotent by name."""
    _followed[name] = provider


def followed_ids(user) -> list[int]:
    """Whom the viewer follows ([] for anonymous viewers, or with no provider)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return []
    found: dict[int, None] = {}
    for provider in list(_followed.values()):
        found.update(dict.fromkeys(provider(user)))
    return list(found)
