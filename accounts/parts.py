"""What each app keeps about an account: its part of "download my data" and of "delete my
account".

An app registers its part in its `AppConfig.ready()` (as the mute list is registered with
comments.viewers): `register_account_part(name, order=..., export=..., erase=...)`.
`export(user)` returns the app's keys of the export document (a read: the app's selectors);
`erase(user=, comments=)` removes the account from what the app stores (a write: the app's
services; `comments` is the owner's choice for their comments, "tombstone" or "remove").
`accounts.services.account_delete` calls every `erase` in `order`, and
`accounts.selectors.export` every `export`: accounts imports no app; the apps import this.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class AccountPart:
    name: str
    order: int
    export: Callable[[object], dict] | None
    erase: Callable[..., object] | None


_parts: dict[str, AccountPart] = {}


def register_account_part(name: str, *, order: int, export=None, erase=None) -> None:
    """Add (or replace, by name: idempotent) an app's part."""
    _parts[name] = AccountPart(name=name, order=order, export=export, erase=erase)


def account_parts() -> list[AccountPart]:
    return sorted(_parts.values(), key=lambda part: (part.order, part.name))
