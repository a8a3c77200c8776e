"""Username rules, shared by sign-up, the register API, the admin and the user model.

A username is what people see, type into URLs (`/u/{name}/`) and mention, so:
- it is NFKC-normalised first: fullwidth `ＡＬＩＣＥ` becomes `ALICE`, ligatures and
  compatibility forms fold to their plain letters;
- it is unique ignoring case and width, in the database: the user model stores
  `username_key(name)` (NFKC, case-folded, NFKC again: Unicode's caseless matching of
  identifiers) under a UNIQUE constraint (accounts/models.py), so `ALICE`, `Alice` and
  `ａｌｉｃｅ` are one name however the row is written;
- it holds no invisible character, by the same Unicode properties as comment text
  (`core.text.invisible`: default-ignorable code points such as the Hangul fillers, which
  are letters that render blank, white space, format controls);
- it is letters, digits and `. _ @ + -` (Django's rule), with at least one letter or
  digit, and never path-like: no leading or trailing dot and no `..` (`/u/../` must
  not be a profile);
- its letters come from one script (Unicode's Scripts.txt): `аlice` with a Cyrillic `а`
  mixes Cyrillic and Latin and is refused;
- it is not a look-alike of an existing username: the model stores
  `username_skeleton(name)`, the Unicode TR39 skeleton (confusables.txt) of the name,
  indexed, and a new name whose skeleton is an existing one's is refused (`аlісе` in
  Cyrillic beside `alice`, `bi11` or `biII` beside `bill`, `rnary` beside `mary`).
The look-alike data is Unicode's, from the confusable-homoglyphs package (pinned in
requirements.txt), not a list kept here.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from confusable_homoglyphs import categories
from confusable_homoglyphs.confusables import confusables_data
from django.contrib.auth import get_user_model
from django.db.models import Q

from core.errors import InvalidInput
from core.text import invisible

_ALLOWED = re.compile(r"[\w.@+-]+")  # used with fullmatch (never `$`: it would accept a trailing newline)
_CJK = {"HAN", "HIRAGANA", "KATAKANA", "HANGUL"}  # Japanese and Korean mix these scripts legitimately
_NO_SCRIPT = {"COMMON", "INHERITED", "Unknown"}
_LRM = "\u200e"
# The key of an account that shared its key with an older one before the key was unique
# (accounts/migrations/0002) is the key, this mark and its id; the mark is not a username character.
LEGACY_MARK = "#"  # confusables.txt's comments wrap right-to-left letters in LEFT-TO-RIGHT MARKs


def _script(char: str) -> str:
    """The script of a letter (Unicode Scripts.txt): LATIN, CYRILLIC, GREEK, ... ('' for non-letters)."""
    if not char.isalpha():
        return ""
    script = categories.alias(char)
    if script in _NO_SCRIPT:
        return ""
    return "CJK" if script in _CJK else script


@functools.cache
def _prototypes() -> dict[str, str]:
    """Each confusable character -> the prototype of its class (Unicode TR39, confusables.txt).

    confusable-homoglyphs lists every line of confusables.txt both ways (source -> prototype
    and prototype -> source), so each class is a star: the prototype is the member with several
    look-alikes, or the sequence a letter maps to (`m` -> `rn`); for a class of two single
    letters either serves, and the lower code point is taken (both members get the same key).
    Prototypes are mapped again until nothing changes, so the skeleton is a fixed point."""
    neighbours: dict[str, set[str]] = {}
    for char, entries in confusables_data.items():
        a = char.replace(_LRM, "")
        for entry in entries:
            b = entry["c"].replace(_LRM, "")
            if a and b and a != b:
                neighbours.setdefault(a, set()).add(b)
                neighbours.setdefault(b, set()).add(a)
    mapping: dict[str, str] = {}
    seen: set[str] = set()
    for start in neighbours:
        if start in seen:
            continue
        members, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node not in members:
                members.add(node)
                todo.extend(neighbours[node] - members)
        seen |= members
        prototype = min(members, key=lambda m: (len(m) == 1, -len(neighbours[m]), m))
        for member in members:
            if len(member) == 1 and member != prototype:
                mapping[member] = prototype
    for char, prototype in mapping.items():
        for _ in range(8):
            mapped = "".join(mapping.get(c, c) for c in prototype)
            if mapped == prototype:
                break
            prototype = mapped
        mapping[char] = prototype
    return mapping


def skeleton(text: str) -> str:
    """Unicode TR39's skeleton: NFD, each character replaced by its confusables.txt prototype, NFD."""
    prototypes = _prototypes()
    return unicodedata.normalize("NFD", "".join(prototypes.get(c, c) for c in unicodedata.normalize("NFD", text)))


def username_key(name: str) -> str:
    """What makes two usernames the same name: NFKC, case-folded, NFKC again (`ＡＬＩＣＥ`, `Alice`
    and `alice` give `alice`). The user model keeps it under a UNIQUE constraint."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def username_skeleton(name: str) -> str:
    """What makes two usernames look alike: the TR39 skeleton taken before and after case folding
    (confusables.txt maps capital `I` and digit `1` to `l`, digit `0` to capital `O`), so `biII`,
    `bi11` and `Bill` share `bill`'s."""
    return skeleton(skeleton(unicodedata.normalize("NFKC", name)).casefold())


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
    hidden = next((c for c in name if invisible(c)), None)
    if hidden is not None:  # Hangul fillers are letters (Lo) that render blank: core.text's properties decide
        raise InvalidInput(f"username must not contain an invisible character (U+{ord(hidden):04X}).",
                           field="username")
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
    """The users whose username equals `name` ignoring case and width: one probe of the
    unique `username_key` index."""
    users = get_user_model().objects.all() if queryset is None else queryset
    return users.filter(username_key=username_key(name))


def users_by_names(names, queryset=None) -> dict:
    """{name: user} for each of `names` that names a user, as `user_named` matches one (NFKC,
    ignoring case and width; an exact match wins): one query for the whole list. `@ALICE` in a
    comment names `alice`."""
    names = [n for n in dict.fromkeys(names) if isinstance(n, str) and n]
    if not names:
        return {}
    users = get_user_model().objects.all() if queryset is None else queryset
    normal = {name: unicodedata.normalize("NFKC", name) for name in names}
    keys = {username_key(n) for n in normal.values()}
    found = list(users.filter(Q(username__in=set(normal.values())) | Q(username_key__in=keys)))
    exact = {u.username: u for u in found}
    by_key = {u.username_key: u for u in found}
    out = {}
    for name, norm in normal.items():
        user = exact.get(norm) or by_key.get(username_key(norm))
        if user is not None:
            out[name] = user
    return out


def username_unavailable(name: str, *, exclude_pk=None) -> str:
    """Why `name` (already cleaned) cannot be a new username, or '' when it can: it is an
    existing username ignoring case and width, or a look-alike of one (the same TR39
    skeleton). One query, two index probes."""
    key = username_key(name)
    users = get_user_model().objects.filter(Q(username_key=key) | Q(username_skeleton=username_skeleton(name)))
    if exclude_pk is not None:
        users = users.exclude(pk=exclude_pk)
    found = users.values_list("username", "username_key").first()
    if found is None:
        return ""
    if found[1].split(LEGACY_MARK, 1)[0] == key:
        return "That username is taken."
    return (f"That username looks like the existing username \u201c{found[0]}\u201d "
            "(letters that look alike count as the same letter).")


def user_named(raw):
    """The user an editor or a URL names, or None: `raw` must already be a username as
    typed (no surrounding spaces or line breaks, no control characters: InvalidInput),
    NFKC-normalised like sign-up (fullwidth `ＡＬＩＣＥ` names `alice`), matched
    ignoring case and width through `username_key`; an exact match wins among accounts
    that shared a key before the key was unique (accounts/migrations/0002 marks the later
    ones' keys), so each of them can still be named."""
    if not isinstance(raw, str) or not raw or len(raw) > 150:
        raise InvalidInput("username must be a user's name.", field="username")
    if raw != raw.strip() or not raw.isprintable():
        raise InvalidInput("username must not hold spaces, line breaks or control characters.", field="username")
    name = unicodedata.normalize("NFKC", raw)
    matches = list(get_user_model().objects.filter(Q(username_key=username_key(name)) | Q(username=name))[:2])
    exact = [u for u in matches if u.username == name]
    return (exact or matches or [None])[0]
