"""Markdown for comments and topic bodies: one renderer (markdown-it-py), one sanitiser (nh3).

`render_markdown(text, profile=...)` turns Markdown source into safe HTML. It is called
ONCE, when the text is written (a comment posted or edited, a topic saved); the result is
stored beside the source (`html`) and pages print it as is. Rendering 20 comments from
scratch on every view would cost a few milliseconds per page; reading the stored `html` costs
nothing beyond the bytes (figures in docs/comments.md).

Invariants (tests/core/test_markdown.py):
- raw HTML in the source is never passed through: markdown-it escapes it (`html=False`)
  and nh3 then keeps only an allow-list of tags and attributes, so no `<script>`, no event
  handler, no `style`, and only http(s)/mailto links (no `javascript:` or `data:` URL);
- the "comment" profile allows paragraphs, emphasis, strikethrough, inline code and code
  blocks, quotes, lists, line breaks (a single newline is a break) and links; no images and no headings (a heading is
  shown as text). The "topic" profile (editors) adds headings, images, rules and tables, and keeps
  CommonMark's soft breaks (a single newline inside a paragraph is a space);
- every link of a comment carries `rel="nofollow ugc"` (user-generated content);
- bare URLs and `www.` hosts become links (linkify); the TEXT of such an autolink is
  shortened to LINK_TEXT_MAX characters ("…" at the end: a 500-character URL does not
  fill a phone screen), its `href` is the whole URL; `@username` becomes a link to
  `/u/<username>/` when the name exists (the `known` callable says which do), never inside
  code or an existing link;
- output is deterministic for a given input, so storing it is safe.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token

COMMENT = "comment"
TOPIC = "topic"

# A mention: "@" not preceded by a word character, "@", "/" or "." (so e-mail addresses
# and URLs are left alone), then a Django username ([\w.@+-], without "@" here).
MENTION = re.compile(r"(?<![\w@/.])@([A-Za-z0-9_](?:[A-Za-z0-9_.+-]{0,148}[A-Za-z0-9_])?)")

_COMMENT_TAGS = {"p", "br", "em", "strong", "del", "s", "code", "pre", "blockquote", "ul", "ol", "li", "a"}
_TOPIC_TAGS = _COMMENT_TAGS | {"h1", "h2", "h3", "h4", "h5", "h6", "img", "hr", "table", "thead", "tbody", "tr", "th",
                               "td"}
_ATTRIBUTES = {
    "a": {"href", "title"},
    "ol": {"start"},
    "img": {"src", "alt", "title"},
    "th": {"style"},
    "td": {"style"},
}
_SCHEMES = {"http", "https", "mailto"}
_RELS = {COMMENT: "nofollow ugc", TOPIC: "noopener"}


def mentioned_usernames(text: str) -> list[str]:
    """The distinct `@names` of a Markdown source, in order of appearance (code spans included:
    callers that notify should resolve them against real users first)."""
    seen: dict[str, None] = {}
    for match in MENTION.finditer(text or ""):
        seen.setdefault(match.group(1), None)
    return list(seen)


def _mention_rule():
    """A core rule that turns `@name` inside plain text tokens (not code, not links) into links.

    The filter of existing users comes with each render (`env["known_usernames"]`), so one parser
    per profile serves every render."""

    def rule(state) -> None:
        known = state.env.get("known_usernames") if isinstance(state.env, dict) else None
        candidates: set[str] = set()
        for block in state.tokens:
            if block.type == "inline" and block.children:
                for token in block.children:
                    if token.type == "text" and "@" in token.content:
                        candidates.update(m.group(1) for m in MENTION.finditer(token.content))
        if not candidates:
            return
        existing = set(known(candidates)) if known is not None else candidates
        if not existing:
            return
        for block in state.tokens:
            if block.type != "inline" or not block.children:
                continue
            children: list[Token] = []
            in_link = 0
            for token in block.children:
                if token.type == "link_open":
                    in_link += 1
                elif token.type == "link_close":
                    in_link -= 1
                if token.type != "text" or in_link or "@" not in token.content:
                    children.append(token)
                    continue
                children.extend(_split_mentions(token, existing, state))
            block.children = children

    return rule


def _split_mentions(token: Token, existing: set[str], state) -> list[Token]:
    out: list[Token] = []
    text, last = token.content, 0
    for match in MENTION.finditer(text):
        name = match.group(1)
        if name not in existing:
            continue
        if match.start() > last:
            out.append(_text(text[last:match.start()], token.level))
        link = Token("link_open", "a", 1)
        link.attrs = {"href": f"/u/{name}/", "class": "mention"}
        link.level = token.level
        out.extend([link, _text(f"@{name}", token.level + 1), Token("link_close", "a", -1)])
        last = match.end()
    if last < len(text):
        out.append(_text(text[last:], token.level))
    return out or [token]


def _text(content: str, level: int) -> Token:
    token = Token("text", "", 0)
    token.content = content
    token.level = level
    return token


LINK_TEXT_MAX = 60  # characters of an autolinked URL shown as its text


def _short_link_text(text: str) -> str:
    return text if len(text) <= LINK_TEXT_MAX else text[:LINK_TEXT_MAX - 1] + "…"


@lru_cache(maxsize=4)
def _parser(profile: str) -> MarkdownIt:
    # A comment is typed in a textarea, where a single newline is meant as a line break; a topic
    # body is a document, written as CommonMark is: a single newline is a soft wrap and only a
    # blank line starts a paragraph (CommonMark spec, "Soft line breaks").
    md = MarkdownIt("commonmark", {"html": False, "linkify": True, "typographer": False,
                                   "breaks": profile != TOPIC})
    shown = md.normalizeLinkText  # used for the text of autolinks and linkified URLs only
    md.normalizeLinkText = lambda link: _short_link_text(shown(link))
    md.enable(["linkify", "strikethrough"])
    if profile == TOPIC:
        md.enable("table")
    else:
        md.disable(["image", "heading", "lheading"])
    md.core.ruler.push("mentions", _mention_rule())
    return md


@functools.lru_cache(maxsize=256)
def markdown_to_text(text: str) -> str:
    """The words a reader sees in a comment's Markdown, as plain text on one line: no `**`,
    no link syntax, no quote markers; code keeps its content. For excerpts (feeds, profile
    activity), which are printed escaped. Parses with the comment profile, renders nothing.
    A pure function of the text, remembered per process (functools.lru_cache, as `html_to_text`):
    a post asks for it three times (its emptiness check, its search entry, its feed excerpt)."""
    if not text:
        return ""
    parts: list[str] = []
    for token in _parsed(text, COMMENT):
        if token.type == "inline":
            for child in token.children or ():
                if child.type in ("text", "code_inline"):
                    parts.append(child.content)
                elif child.type in ("softbreak", "hardbreak"):
                    parts.append(" ")
            parts.append(" ")
        elif token.type in ("code_block", "fence"):
            parts.append(token.content)
            parts.append(" ")
    return " ".join("".join(parts).split())


@functools.lru_cache(maxsize=256)
def html_to_text(html: str, length: int = 200) -> str:
    """Rendered html as plain text on one line, at most `length` characters: tags stripped and
    entities decoded (`&amp;` becomes "&"), so a template's autoescape escapes it exactly once.
    The excerpt of a topic without a summary (printed twice on its page, once per topic in the
    lists), and of a comment a threaded page continues. A pure function of its arguments,
    remembered per process (functools.lru_cache, keyed by the html itself: an edited text is a
    new entry), as Django's strip_tags parses the html until it stops changing."""
    from html import unescape

    from django.utils.html import strip_tags
    from django.utils.text import Truncator

    return Truncator(" ".join(unescape(strip_tags(html or "")).split())).chars(length)


def sanitise(html: str, *, profile: str = COMMENT) -> str:
    """Keep only the allow-listed tags and attributes of `profile`; links get its `rel`."""
    tags = _TOPIC_TAGS if profile == TOPIC else _COMMENT_TAGS
    attributes = {tag: attrs for tag, attrs in _ATTRIBUTES.items() if tag in tags}
    return nh3.clean(html, tags=tags, attributes=attributes, url_schemes=_SCHEMES, link_rel=_RELS[profile],
                     allowed_classes={"a": {"mention"}, "code": {f"language-{lang}" for lang in _LANGUAGES}},
                     filter_style_properties={"text-align"}, strip_comments=True)


# Code-fence languages whose class survives sanitising (for a future highlighter; harmless now).
_LANGUAGES = ("python", "js", "javascript", "json", "bash", "sh", "sql", "html", "css", "text")


def render_markdown(text: str, *, profile: str = COMMENT,
                    known_usernames: Callable[[Iterable[str]], set[str]] | None = None) -> str:
    """Markdown `text` as sanitised HTML for `profile` ("comment" or "topic").

    `known_usernames(names) -> set` filters `@names` down to existing users (one query);
    without it every well-formed `@name` is linked.
    """
    if profile not in _RELS:
        raise ValueError(f"unknown Markdown profile {profile!r}")
    if not text:
        return ""
    if "@" not in text:  # no mention to look up: the same HTML whoever exists (`_rendered`)
        return _rendered(text, profile)
    env = {"known_usernames": known_usernames} if known_usernames is not None else {}
    return sanitise(_parser(profile).render(text, env), profile=profile).strip()


@functools.lru_cache(maxsize=256)
def _rendered(text: str, profile: str) -> str:
    """`render_markdown` of a text without "@": the mention rule finds no candidate and never asks
    `known_usernames`, so the HTML is a pure function of the text and the profile, remembered per
    process (functools.lru_cache): a post renders its text twice (the spam check's link count,
    then the stored html), from the tokens `markdown_to_text` parsed (`_parsed`)."""
    md = _parser(profile)
    return sanitise(md.renderer.render(_parsed(text, profile), md.options, {}), profile=profile).strip()


@functools.lru_cache(maxsize=8)
def _parsed(text: str, profile: str) -> list[Token]:
    """The token stream of `text` for `profile` with no known users given (every well-formed
    `@name` a link), remembered per process (functools.lru_cache): what `MarkdownIt.render` renders
    (its `parse`, then `renderer.render` of the tokens), so a post's text is parsed once for its
    plain words (`markdown_to_text`) and its HTML (`_rendered`). Read only: neither changes a token.
    A few entries only: the two reads of one post come one after the other (a worker's threads
    each have a post in flight at most), and a long text's tokens weigh about a hundred times its
    characters, where the string caches above keep only the results."""
    return _parser(profile).parse(text, {})
