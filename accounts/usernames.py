"""Username rules, shared by sign-up, the register API and the admin.

A username is what people see, type into URLs (`/u/{name}/`) and mention, so:
- it is NFKC-normalised first: fullwidth `ＡＬＩＣＥ` becomes `ALICE`, ligatures and
  compatibility forms fold to their plain letters;
- it is unique case-insensitively (`ALICE` is refused beside `alice`);
- it is letters, digits and `. _ @ + -` (Django's rule), with at least one letter or
  digit, and never path-like: no leading or trailing dot and no `..` (`/u/../` must
  not be a profile);
- its letters come from one script: `аlice` with a Cyrillic `а` mixes Cyrillic and
  Latin and is refused; a name written wholly in look-alike letters (Cyrillic `аlісе`)
  is refused when its Latin skeleton is an existing username.
Uniqueness is checked here and again when the row is written; SQLite's case-insensitive
comparison covers ASCII only, which the skeleton check makes up for in the common case.
Case-insensitive lookups compare `UPPER(username)` with `UPPER(name)` in SQL (what
`iexact` means on PostgreSQL), which the `auth_user_username_upper` index answers
(migration cms_site/0003); `iexact` on SQLite is a LIKE that no index serves.
"""

from __future__ import annotations

import re
import unicodedata

from django.contrib.auth import get_user_model
from django.db.models import Value
from django.db.models.functions import Upper

from core.errors import InvalidInput

_ALLOWED = re.compile(r"[\w.@+-]+")  # used with fullmatch (never `$`: it would accept a trailing newline)

# Letters that look like Latin ones (UTS #39 confusables, the common Cyrillic and Greek ones).
_LOOKALIKES = str.maketrans({
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t",
    "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l",
    "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x",
    "ʏ": "y", "ɡ": "g", "ı": "i",
})


def _script(char: str) -> str:
    """The script of a letter from its Unicode name: LATIN, CYRILLIC, GREEK, ... ('' for non-letters)."""
    if not char.isalpha():
        return ""
    name = unicodedata.name(char, "")
    if name.startswith(("CJK", "HIRAGANA", "KATAKANA")):
        return "CJK"  # Japanese mixes these scripts legitimately
    return name.split(" ", 1)[0]


def skeleton(name: str) -> str:
    """A comparison key: case-folded, look-alike letters mapped to Latin."""
    return name.casefold().translate(_LOOKALIKES)


def username_clean(raw, *, max_length: int | None = None) -> str:
    """The normalised username, or InvalidInput saying what is wrong. Does not check uniqueness."""
    if not isinstance(raw, str):
        raise InvalidInput("username must be a string.", field="username")
    name = unicodedata.normalize("NFKC", raw).strip()
    max_length = max_length or get_user_model()._meta.get_field("username").max_length
    if not name:
        raise InvalidInput("username must not be empty.", field="username")
    if len(name) > max_length:
        raise InvalidInput(f"username must be at most {max_length} characters.", field="username")
    if not _ALLOWED.fullmatch(name):
        raise InvalidInput("username may contain only letters, digits and . _ @ + -", field="username")
    if not any(c.isalnum() for c in name):
        raise InvalidInput("username must contain a letter or a digit.", field="username")
    if name.startswith(".") or name.endswith(".") or ".." in name:
        raise InvalidInput("username must not start or end with a dot, or contain '..'.", field="username")
    scripts = {s for s in map(_script, name) if s}
    if len(scripts) > 1:
        raise InvalidInput("username must not mix alphabets (" + ", ".join(sorted(scripts)).lower() + ").",
                           field="username")
    return name


def users_named(name: str, queryset=None):
    """The users whose username equals `name` ignoring case: `UPPER(username) = UPPER(name)`,
    an index probe of auth_user_username_upper."""
    users = get_user_model().objects.all() if queryset is None else queryset
    return users.alias(username_upper=Upper("username")).filter(username_upper=Upper(Value(name)))


def username_taken(name: str, *, exclude_pk=None) -> bool:
    """Whether `name` (already cleaned) collides with an existing username, ignoring case and look-alikes."""
    users = get_user_model().objects.all()
    if exclude_pk is not None:
        users = users.exclude(pk=exclude_pk)
    if users_named(name, users).exists():
        return True
    key = skeleton(name)
    return key != name.casefold() and users_named(key, users).exists()


def user_named(raw):
    """The user an editor or a URL names, or None: `raw` must already be a username as
    typed (no surrounding spaces or line breaks, no control characters: InvalidInput),
    NFKC-normalised like sign-up (fullwidth `ＡＬＩＣＥ` names `alice`), matched
    ignoring case (usernames are unique ignoring case; an exact match wins among
    accounts that predate that rule)."""
    if not isinstance(raw, str) or not raw or len(raw) > 150:
        raise InvalidInput("username must be a user's name.", field="username")
    if raw != raw.strip() or not raw.isprintable():
        raise InvalidInput("username must not hold spaces, line breaks or control characters.", field="username")
    name = unicodedata.normalize("NFKC", raw)
    matches = list(users_named(name)[:5])
    exact = [u for u in matches if u.username == name]
    return (exact or matches or [None])[0]
