"""core.text.visible_strip: the invisible grapheme clusters at both ends go, whole clusters; the
text between is looked at only through two searches, not cluster by cluster."""

import random

import regex

from core import text as core_text
from core.text import visible_strip

_GRAPHEME = regex.compile(r"\X")


def _per_cluster(text: str) -> str:
    """The definition, cluster by cluster: from the first cluster holding a visible code point to
    the last one."""
    clusters = [(m.start(), m.end()) for m in _GRAPHEME.finditer(text) if core_text._VISIBLE.search(m.group())]
    return text[clusters[0][0]:clusters[-1][1]] if clusters else ""


PALETTE = [*"a b\n\t\r#1", "\u200d", "\u200c", "\ufe0f", "\u034f", "\u0301", "\U0001f1eb", "\U0001f1f7", "\U0001f468",
           "\U0001f3fd", "\u2800", "\U0001d159", "\u00a0", "\u1160", "\u1100", "\uac00", "\u11a8", "\u0600", "\u0915",
           "\u094d", "\U000e0067", "\U000e007f", "\U0001f3f4", "\u2764", "\u00ad", "\u0e33", "\u0903", "\u20e3"]


def test_whole_clusters_are_kept_at_both_ends():
    assert visible_strip("\u200b \u2800a\u0301\ufe0f \u034f\n") == "a\u0301\ufe0f"
    assert visible_strip(" \U0001f3f4\U000e0067\U000e007f ") == "\U0001f3f4\U000e0067\U000e007f"  # a flag's tags
    assert visible_strip("\u0301 x \u00a0") == "x"  # a mark on no base shows nothing
    assert visible_strip("\u200d\ufe0f \u2800") == ""
    rng = random.Random(29)
    for _ in range(20_000):
        sample = "".join(rng.choice(PALETTE) for _ in range(rng.randint(0, 10)))
        assert visible_strip(sample) == _per_cluster(sample), repr(sample)


def test_an_ascii_text_is_not_walked_cluster_by_cluster(monkeypatch):
    walked = []

    class Counting:
        def finditer(self, text, *args):
            walked.append(text)
            return _GRAPHEME.finditer(text, *args)

    monkeypatch.setattr(core_text, "_GRAPHEME", Counting())
    assert visible_strip("  a new comment, with words \n") == "a new comment, with words"
    assert walked == []
