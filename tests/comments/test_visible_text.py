"""What a reader can see decides whether a comment has content, by Unicode's own properties
(core/text.py): default-ignorable code points, white space, format controls, combining marks
without a base and the symbols drawn blank are nothing; any visible grapheme is content. The
duplicate check compares texts with the same rules."""

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.test import APIClient

from core.errors import InvalidInput
from core.text import text_clean

pytestmark = pytest.mark.django_db

BLANK = ["\ufe0f", "\u034f", "\U0001d159", "\ufe0f\u200d", "\u2800\ufe0f" * 4, "\u0301\u0301", "\U000e0041",
         "\u180b", "\U0001bca0", " \u3164\n\u2800 "]


def _post(topic, user, text):
    api = APIClient(raise_request_exception=False)
    api.force_authenticate(user)
    return api.post(f"/api/topics/{topic.slug}/comments/", {"text": text}, format="json")


@pytest.mark.parametrize("text", BLANK, ids=lambda t: "+".join(f"U{ord(c):04X}" for c in t[:4]))
def test_a_comment_that_shows_nothing_is_empty(make_topic, alice, text):
    topic = make_topic("document")
    r = _post(topic, alice, text)
    assert r.status_code == 400 and r.json()["errors"] == {"text": ["text must not be empty."]}


# Markdown that renders to nothing: character references, emphasis or a quote around
# invisible characters, an empty link, a rule alone.
RENDERED_BLANK = ["&#xFE0F;&#x34F;&#x2800;", "&nbsp;", "**\u2800\ufe0f**", "> \u034f", "[](https://example.org/)", "---"]


@pytest.mark.parametrize("text", RENDERED_BLANK)
def test_markdown_that_renders_to_nothing_is_empty_on_post_and_edit(make_topic, alice, text):
    topic = make_topic("document")
    r = _post(topic, alice, text)
    assert r.status_code == 400 and r.json()["errors"] == {"text": ["text must not be empty."]}, r.json()
    posted = _post(topic, alice, "Words.")
    api = APIClient(raise_request_exception=False)
    api.force_authenticate(alice)
    edited = api.patch(f"/api/topics/{topic.slug}/comments/{posted.json()['id']}/", {"text": text}, format="json")
    assert edited.status_code == 400 and edited.json()["errors"] == {"text": ["text must not be empty."]}


@pytest.mark.parametrize("text", ["@bob", "<http://example.org>", "&amp;", ":)", "> quoted", "`x`"])
def test_markdown_that_shows_something_is_accepted(make_topic, alice, text):
    r = _post(make_topic("document"), alice, text)
    assert r.status_code == 201, r.json()


@pytest.mark.parametrize("text", ["\u2764\ufe0f", "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",
                                  "e\u0301", "\u0915\u094d\u200d", "a\U0001d159b"])
def test_a_visible_grapheme_keeps_its_invisible_parts(make_topic, alice, text):
    topic = make_topic("document")
    r = _post(topic, alice, f" {text} ")
    assert r.status_code == 201, r.json()
    assert r.json()["text"] == text  # an emoji keeps its variation selector, a flag its tags


@pytest.mark.parametrize("twin", ["Buy my thing now\ufe0f", "Buy my th\u034fing now", "Buy my thing\u2800 now",
                                  "BUY MY \U0001d159THING NOW", "Buy\u180b my thing now"])
def test_an_invisible_code_point_does_not_make_a_new_text(make_topic, alice, settings, twin):
    settings.SPAM_DUPLICATE_WINDOW = 3600
    topic = make_topic("document")
    assert _post(topic, alice, "Buy my thing now").status_code == 201
    r = _post(topic, alice, twin)
    assert r.status_code == 400 and r.json()["code"] == "spam"


# --- properties ----------------------------------------------------------------------------------

_IGNORABLE_OR_SPACE = regex.compile(r"[\p{Default_Ignorable_Code_Point}\p{White_Space}]")
_CANDIDATES = _IGNORABLE_OR_SPACE.findall("".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF))
_SHOWN = regex.compile(r"[\p{L}\p{N}\p{P}\p{S}]")  # letters, numbers, punctuation, symbols


def _visible(char):
    return _SHOWN.match(char) is not None and not _IGNORABLE_OR_SPACE.match(char) and char not in "\u2800\U0001d159"


blanks = st.lists(st.sampled_from(_CANDIDATES), min_size=1, max_size=30).map("".join)
visible_chars = st.characters(exclude_categories=("Cs",)).filter(_visible)


@given(blanks)
def test_only_default_ignorable_or_white_space_is_refused(text):
    with pytest.raises(InvalidInput):  # empty, or a control or bidi character named
        text_clean(text, max_length=10_000)


@given(blanks, visible_chars, st.integers(min_value=0))
def test_a_visible_character_anywhere_is_accepted(text, char, where):
    cut = where % (len(text) + 1)
    text = "".join(c for c in text if c not in "\x0b\x0c\x1c\x1d\x1e\x1f\x85" and c not in
                   "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")  # refused outright (tested elsewhere)
    cut = min(cut, len(text))
    stored = text_clean(text[:cut] + char + text[cut:], max_length=10_000)
    assert char in stored


def _refused_by_category(char: str) -> bool:
    """The rule of core/text.py's docstring asked of each code point's General_Category."""
    import unicodedata

    from core.text import BIDI_CONTROLS

    category = unicodedata.category(char)
    return char in BIDI_CONTROLS or (category == "Cc" and char not in "\n\t") or category == "Cs"


def test_every_code_point_is_refused_or_kept_by_its_category():
    from core.text import REMOVED_CHARACTERS

    # Every code point of the Basic Multilingual Plane (where every control, surrogate and bidi
    # control lies), then one in 97 of the planes above.
    for code in [*range(0x10000), *range(0x10000, 0x110000, 97), 0x10FFFF]:
        char = chr(code)
        if char in "\r" or char.translate(REMOVED_CHARACTERS) == "":
            continue  # a carriage return becomes a newline, U+FEFF and U+200B are removed first
        try:
            text_clean(f"a{char}b", max_length=10)
            refused = False
        except InvalidInput as error:
            refused = "must not contain" in str(error)
        assert refused == _refused_by_category(char), f"U+{code:04X}"


def test_the_first_refused_character_is_named():
    with pytest.raises(InvalidInput, match=r"bidirectional control \(U\+202E\)"):
        text_clean("ok \u202e then \x07", max_length=100)
    with pytest.raises(InvalidInput, match=r"control character \(U\+D800\)"):
        text_clean("lone \ud800 surrogate \u202e", max_length=100)


def test_the_refused_characters_are_looked_for_without_a_call_per_character(monkeypatch):
    import unicodedata

    asked = []
    real = unicodedata.category
    monkeypatch.setattr(unicodedata, "category", lambda char: asked.append(char) or real(char))
    text_clean("a comment of ordinary length, with nothing refused in it. " * 20, max_length=5000)
    assert asked == []
