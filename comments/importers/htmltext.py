"""HTML comment bodies (Disqus, WordPress, Remark42) as the Markdown our comments are written in.

Paragraphs and line breaks, links, emphasis, code, quotes and lists are kept; every other tag
is dropped with its text kept; entities are decoded. What comes out is rendered and sanitised
like any posted text, so nothing in the source HTML reaches a page as HTML.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_BLOCK = {"p", "div", "blockquote", "ul", "ol", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "table"}
_MARK = {"b": "**", "strong": "**", "i": "*", "em": "*", "code": "`", "s": "~~", "del": "~~"}
_ESCAPE = re.compile(r"([\\`*_\[\]<>#])")


class _Converter(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.links: list[str | None] = []
        self.quote = 0
        self.pre = 0
        self.lists: list[str] = []

    def _newline(self, n: int = 1):
        text = "".join(self.out)
        stripped = text.rstrip(" ")
        have = len(stripped) - len(stripped.rstrip("\n"))
        if stripped:
            self.out = [stripped, "\n" * max(0, n - have)]
            if self.quote:
                self.out.append("> " * self.quote)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in _BLOCK:
            self._newline(2)
            if tag == "blockquote":
                self.quote += 1
                self.out.append("> ")
            elif tag == "pre":
                self.pre += 1
                self.out.append("```\n")
            elif tag in ("ul", "ol"):
                self.lists.append(tag)
        elif tag == "br":
            self.out.append("  \n" + "> " * self.quote)
        elif tag == "li":
            self._newline(1)
            self.out.append("1. " if self.lists and self.lists[-1] == "ol" else "- ")
        elif tag == "a":
            href = (attrs.get("href") or "").strip()
            self.links.append(href if re.match(r"https?://|mailto:", href, re.I) else None)
            if self.links[-1]:
                self.out.append("[")
        elif tag in _MARK and not self.pre:
            self.out.append(_MARK[tag])

    def handle_endtag(self, tag):
        if tag in _BLOCK:
            if tag == "blockquote":
                self.quote = max(0, self.quote - 1)
            elif tag == "pre":
                self.pre = max(0, self.pre - 1)
                self._newline(1)
                self.out.append("```")
            elif tag in ("ul", "ol") and self.lists:
                self.lists.pop()
            self._newline(2)
        elif tag == "a" and self.links:
            href = self.links.pop()
            if href:
                self.out.append(f"]({href.replace(')', '%29').replace(' ', '%20')})")
        elif tag in _MARK and not self.pre:
            self.out.append(_MARK[tag])

    def handle_data(self, data):
        if self.pre:
            self.out.append(data)
            return
        data = re.sub(r"\s+", " ", data)
        self.out.append(_ESCAPE.sub(r"\\\1", data))


def html_to_markdown(html: str) -> str:
    converter = _Converter()
    converter.feed(html or "")
    converter.close()
    text = "".join(converter.out)
    text = re.sub(r"[ \t]+\n", lambda m: "  \n" if m.group(0).startswith("  ") else "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()
