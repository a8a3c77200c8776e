"""`{{ text|highlight:q }}`: `text` escaped, with the words of the search `q` wrapped in <mark>.

The text is cut at word boundaries and EVERY piece is escaped, matched or not; only the
<mark> tags this filter writes are markup, so no text or query can inject HTML. A word
matches as the search index compares words (NFKC, case-folded, whole words, by their
Snowball stem: `search.managers.words` and `stem`), so a search for "buckets" marks
"bucket" too."""

import re
import unicodedata

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

from search.managers import MAX_QUERY_WORDS, stem, words

register = template.Library()

_RUN = re.compile(r"[^\W_]+")


@register.filter
def highlight(text, q):
    text = "" if text is None else str(text)
    terms = {stem(word) for word in words(str(q or ""), limit=MAX_QUERY_WORDS)}
    if not terms or not text:
        return escape(text)
    out, last = [], 0
    for match in _RUN.finditer(text):
        if stem(unicodedata.normalize("NFKC", match.group(0)).casefold()) in terms:
            out.append(escape(text[last:match.start()]))
            out.append(f"<mark>{escape(match.group(0))}</mark>")
            last = match.end()
    out.append(escape(text[last:]))
    return mark_safe("".join(out))  # every piece above is escaped
