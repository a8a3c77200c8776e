"""User-written text (comments): what counts as content and what is refused.

Decisions (README "Errors"):
- `\r\n` and `\r` become `\n`; a byte-order mark (U+FEFF) and zero-width spaces
  (U+200B) are removed wherever they are: they carry nothing a reader can see;
- control characters other than newline and tab (NUL, ESC, DEL, C1 controls), lone
  surrogates and the bidirectional embedding/override/isolate controls (U+202A-U+202E,
  U+2066-U+2069: "Trojan Source" reordering) are refused with a 400 naming the
  character, rather than silently stripped, so the writer knows why the text changed;
- what is invisible is decided by Unicode's own character properties (the `regex`
  library's tables), not by a list kept here: Default_Ignorable_Code_Point (variation
  selectors, the combining grapheme joiner, joiners, Hangul fillers, tags..., and the
  unassigned code points the property reserves, U+2065, U+FFF0-U+FFF8, U+E0000-U+E0FFF:
  the Unicode Standard asks that a default-ignorable code point an implementation does not
  know be rendered invisible, so one assigned later never shows as a box), White_Space,
  the format controls (General_Category Cf), and the two characters Unicode
  classes as symbols though they are drawn as empty space (the braille blank U+2800 and
  the musical null notehead U+1D159: Unicode has no property for "renders blank").
  A combining mark is visible only on a visible base;
- a grapheme cluster (Unicode's extended grapheme cluster, `\\X`) is visible when one of
  its code points is visible and not a combining mark; the text is trimmed of invisible
  clusters at both ends (whole clusters, so an emoji keeps its variation selector and a
  flag its tag characters), and text with no visible cluster is empty. Zero-width
  joiners and marks inside the text stay: emoji sequences and several scripts need them;
- `comparable()` is the text two comments are compared by (the spam check's near
  duplicates): NFKC, invisible code points dropped, case folded, white space collapsed,
  so adding U+FE0F or inserting U+034F does not make a new text.
"""

from __future__ import annotations

import re
import unicodedata

import regex

from core.errors import InvalidInput

REMOVED_CHARACTERS = str.maketrans("", "", "\ufeff\u200b")
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

# Symbols (General_Category So) drawn as empty space: BRAILLE PATTERN BLANK and MUSICAL SYMBOL
# NULL NOTEHEAD. Everything else comes from Unicode's properties below.
_BLANK_SYMBOLS = "\u2800\U0001d159"
_INVISIBLE_CLASS = r"\p{Default_Ignorable_Code_Point}\p{White_Space}\p{Cf}" + _BLANK_SYMBOLS
_INVISIBLE = regex.compile(f"[{_INVISIBLE_CLASS}]")
_INVISIBLE_RUN = regex.compile(f"[{_INVISIBLE_CLASS}--[\\p{{White_Space}}]]+", regex.V1)
# A code point that shows something by itself: neither invisible nor a combining mark (a mark
# shows only on a base).
_VISIBLE = regex.compile(f"[^{_INVISIBLE_CLASS}\\p{{M}}]")
_GRAPHEME = regex.compile(r"\X")
# The last visible code point: `_VISIBLE` searched from the end (the `regex` library's REVERSE flag).
_VISIBLE_LAST = regex.compile(f"[^{_INVISIBLE_CLASS}\\p{{M}}]", regex.REVERSE)


def invisible(char: str) -> bool:
    """A default-ignorable code point, white space, a format control or a blank-drawn symbol."""
    return _INVISIBLE.match(char) is not None


def visible_strip(text: str) -> str:
    """`text` without the invisible grapheme clusters at its ends ('' when nothing is visible): it
    starts with the cluster that holds the first visible code point and ends with the one that holds
    the last (the clusters before and after those hold none). The two code points are found by one
    search each; the clusters (taken from the start of the text, as Unicode segments it) are only
    compared with their positions."""
    first = _VISIBLE.search(text)
    if first is None:
        return ""
    lo, hi = first.start(), _VISIBLE_LAST.search(text).start()
    if text.isascii():  # every ASCII code point is a cluster of its own but CR LF (UAX #29 GB3-GB5, GB999)
        return text[lo:hi + 1]
    start = None
    for cluster in _GRAPHEME.finditer(text):
        if start is None and cluster.end() > lo:
            start = cluster.start()
        if cluster.end() > hi:
            return text[start:cluster.end()]
    raise AssertionError("unreachable: the last visible code point is in a cluster")


def comparable(text: str) -> str:
    """The text as two texts are compared (near duplicates): NFKC, invisible code points other
    than white space dropped, case folded, NFKC again, white space collapsed."""
    folded = _INVISIBLE_RUN.sub("", unicodedata.normalize("NFKC", text))
    return " ".join(unicodedata.normalize("NFKC", folded.casefold()).split())


# The refused code points as one character class, searched in C rather than asked of
# `unicodedata` one character at a time: the controls (General_Category Cc, U+0000-U+001F and
# U+007F-U+009F: Unicode's stability policy adds no Cc character) but newline and tab, the
# surrogates (Cs, U+D800-U+DFFF: a JSON string may carry a lone one) and BIDI_CONTROLS.
_REFUSED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff" + "".join(sorted(BIDI_CONTROLS)) + "]")


def text_clean(text, *, field: str = "text", max_length: int) -> str:
    """The text as stored, or InvalidInput (not a string, a refused character, empty, too long)."""
    if not isinstance(text, str):
        raise InvalidInput(f"{field} must be a string.", field=field)
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(REMOVED_CHARACTERS)
    found = _REFUSED.search(text)
    if found is not None:
        bad = found.group()
        kind = "bidirectional control" if bad in BIDI_CONTROLS else "control character"
        raise InvalidInput(f"{field} must not contain a {kind} (U+{ord(bad):04X}).", field=field)
    text = visible_strip(text)
    if not text:
        raise InvalidInput(f"{field} must not be empty.", field=field)
    if len(text) > max_length:
        raise InvalidInput(f"{field} must be at most {max_length} characters (it has {len(text)}).", field=field)
    return text
