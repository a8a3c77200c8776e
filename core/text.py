"""User-written text (comments): what counts as content and what is refused.

Decisions (README "Errors"):
- `\r\n` and `\r` become `\n`; a byte-order mark (U+FEFF) and zero-width spaces
  (U+200B) are removed wherever they are: they carry nothing a reader can see;
- control characters other than newline and tab (NUL, ESC, DEL, C1 controls), lone
  surrogates and the bidirectional embedding/override/isolate controls (U+202A-U+202E,
  U+2066-U+2069: "Trojan Source" reordering) are refused with a 400 naming the
  character, rather than silently stripped, so the writer knows why the text changed;
- the text is trimmed of white space, invisible format characters and characters that
  render blank (Hangul fillers, the braille blank, Khmer inherent vowels: BLANK_RENDERING)
  at both ends, and text with no visible character left (only zero-width joiners or
  U+3164, for instance) is empty. Zero-width joiners inside the text stay: emoji sequences and several scripts
  need them. The right-to-left and left-to-right marks (U+200E/U+200F) stay too.
"""

from __future__ import annotations

import unicodedata

from core.errors import InvalidInput

REMOVED_CHARACTERS = str.maketrans("", "", "\ufeff\u200b")
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Letters and marks that render as blank space though they are not white space nor format
# characters: the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), the braille blank (U+2800)
# and the Khmer inherent vowels (U+17B4, U+17B5). A text of nothing else shows blank.
BLANK_RENDERING = frozenset("\u115f\u1160\u17b4\u17b5\u2800\u3164\uffa0")


def invisible(char: str) -> bool:
    """White space, a format character (zero-width, joiners, soft hyphen) or a blank-rendering one."""
    return char.isspace() or unicodedata.category(char) == "Cf" or char in BLANK_RENDERING


_invisible = invisible


def _refused(char: str) -> bool:
    if char in BIDI_CONTROLS:
        return True
    category = unicodedata.category(char)
    return (category == "Cc" and char not in "\n\t") or category == "Cs"


def text_clean(text, *, field: str = "text", max_length: int) -> str:
    """The text as stored, or InvalidInput (not a string, a refused character, empty, too long)."""
    if not isinstance(text, str):
        raise InvalidInput(f"{field} must be a string.", field=field)
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(REMOVED_CHARACTERS)
    bad = next((c for c in text if _refused(c)), None)
    if bad is not None:
        kind = "bidirectional control" if bad in BIDI_CONTROLS else "control character"
        raise InvalidInput(f"{field} must not contain a {kind} (U+{ord(bad):04X}).", field=field)
    start, end = 0, len(text)
    while start < end and _invisible(text[start]):
        start += 1
    while end > start and _invisible(text[end - 1]):
        end -= 1
    text = text[start:end]
    if not text:
        raise InvalidInput(f"{field} must not be empty.", field=field)
    if len(text) > max_length:
        raise InvalidInput(f"{field} must be at most {max_length} characters (it has {len(text)}).", field=field)
    return text
