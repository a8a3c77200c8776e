"""Spam checks before a comment is stored: a small pipeline with one verdict.

A submission (author, text, topic, client address and agent, the page form's honeypot)
runs through `CHECKS` in order; each check returns nothing, HOLD or REJECT with a
reason. The verdict is the strongest one met: REJECT (a 400 `code: "spam"`, nothing
stored), HOLD (the comment goes to the moderation queue's Pending tab with the reasons:
`moderation.services.comment_hold`; the API answers 202) or ACCEPT. A REJECT stops the
pipeline; the remote check (Akismet) runs only when nothing local rejected.

The checks:
- honeypot: a field hidden from people on the page comment forms (`website`,
  core.clients.HONEYPOT_FIELD); a bot fills it: REJECT. The API has no honeypot;
- links: more than `SPAM_MAX_LINKS` links (http(s)://, www., bare domain names with a
  common top-level domain): HOLD; more than twice as many: REJECT;
- words: editors keep a list of banned words (REJECT) and suspect words (HOLD) in the
  admin (`SpamWord`); matching is on whole words of the NFKC, case-folded text, so
  `ＶＩＡＧＲＡ` and `Viagra` match `viagra` but `Scunthorpe` does not match a banned
  substring;
- duplicate: the same text (core.text.comparable: NFKC, invisible characters dropped by Unicode's
  properties, case-folded, white space collapsed) by the same user
  within `SPAM_DUPLICATE_WINDOW` seconds: REJECT; a text shorter than
  `SPAM_DUPLICATE_MIN_LENGTH` characters only within the same discussion. Fingerprints live in Django's cache
  (per process with the default local memory, like the rate limits);
- akismet: with `AKISMET_API_KEY` set, Akismet's comment-check (`AKISMET_URL`, default
  Akismet's REST endpoint): "true" is HOLD, "true" with `X-akismet-pro-tip: discard` is
  REJECT. Off without a key. A timeout or an error lets the comment through (logged):
  an outage of a third party must not stop every comment.
Editors (`core.permissions.can_moderate`, not plain staff) skip the pipeline, when posting and
when editing: nothing of theirs is held or refused, and no text of theirs goes to a remote check.
Asking costs the permission queries (Django's ModelBackend: the user's and their groups'), so it
is asked only when the answer can change something (`gate_verdict`): the local checks run first,
and an ordinary text no local check finds anything in, with no remote check configured, is let
through without asking. An edit runs the same checks (`SpamGate.check_edit`); what a post would have held
is refused for an edit (it cannot wait in the queue).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import unicodedata
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache

from comments.managers.base import DELETED
from comments.selectors import comment_stored
from core.clients import Client, current_client
from core.errors import InvalidInput
from core.markdown import render_markdown
from core.permissions import can_moderate
from core.sharedcache import cache_or
from core.text import comparable
from topics.selectors import topic_stored

logger = logging.getLogger(__name__)

ACCEPT, HOLD, REJECT = "accept", "hold", "reject"
_STRENGTH = {ACCEPT: 0, HOLD: 1, REJECT: 2}


class SpamRejected(InvalidInput):
    code = "spam"


@dataclass(frozen=True)
class Finding:
    action: str  # HOLD or REJECT
    check: str
    reason: str


@dataclass(frozen=True)
class Verdict:
    action: str
    findings: tuple[Finding, ...] = ()

    @property
    def reason(self) -> str:
        return "; ".join(f"{f.check}: {f.reason}" for f in self.findings if f.action == self.action)


@dataclass(frozen=True)
class Submission:
    author_id: int
    author_name: str
    text: str
    topic_url: str = ""
    client: Client = field(default_factory=Client)


# --- the checks --------------------------------------------------------------------------------

def check_honeypot(sub: Submission) -> Finding | None:
    if sub.client.honeypot:
        return Finding(REJECT, "honeypot", "a field people cannot see was filled in")
    return None


_TLDS = r"(?:com|net|org|info|biz|io|co|ru|cn|xyz|top|click|online|site|shop|app|dev|me|tk|ml|ga|cf|gq|de|uk|fr)"
LINK = re.compile(r"(?:\b[a-z][a-z0-9+.-]*://[^\s<>()]+|\bwww\.[^\s<>()]+|\b(?:[a-z0-9-]+\.)+" + _TLDS + r"\b(?:/[^\s<>()]*)?)",
                  re.IGNORECASE)


def count_links(text: str) -> int:
    """Links the text shows: what the pattern finds, or what the Markdown renderer makes links of
    (protocol-relative `[l](//h.example/p)`, bare domains it linkifies such as `h.ly/x`), whichever
    is more. `@name` links to profiles are not counted."""
    normalised = unicodedata.normalize("NFKC", text)
    rendered = sum(1 for href in _HREF.findall(render_markdown(normalised, known_usernames=lambda names: set()))
                   if not href.startswith("/") or href.startswith("//"))
    return max(len(LINK.findall(normalised)), rendered)


_HREF = re.compile(r'<a [^>]*href="([^"]*)"')


def check_links(sub: Submission) -> Finding | None:
    cap = settings.SPAM_MAX_LINKS
    links = count_links(sub.text)
    if links > 2 * cap:
        return Finding(REJECT, "links", f"{links} links (at most {cap})")
    if links > cap:
        return Finding(HOLD, "links", f"{links} links (at most {cap} without review)")
    return None


def normalise(text: str) -> str:
    """The text as texts are compared: core.text.comparable (NFKC, Unicode's default-ignorable,
    format and blank-drawn characters dropped, case folded, white space collapsed), so an added
    variation selector or combining grapheme joiner does not make a new text."""
    return comparable(text)


def _word_pattern(words: list[str]) -> re.Pattern | None:
    words = sorted({normalise(w) for w in words if normalise(w)}, key=len, reverse=True)
    if not words:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(w) for w in words) + r")(?!\w)")


@functools.lru_cache(maxsize=4)
def _word_patterns(rows: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str, re.Pattern | None], ...]:
    """(action, kind, pattern) of the editors' lists as `SpamWord.rows()` read them: a pure function
    of the rows, remembered per process (functools.lru_cache keyed by the rows themselves, read on
    every post: a changed list is a new key, so a change applies at the next post)."""
    from moderation.models import SpamWord

    lists = {SpamWord.BANNED: [], SpamWord.SUSPECT: []}
    for word, kind in rows:
        lists.setdefault(kind, []).append(word)
    return tuple((action, kind, _word_pattern(lists[kind]))
                 for action, kind in ((REJECT, SpamWord.BANNED), (HOLD, SpamWord.SUSPECT)))


def check_words(sub: Submission) -> Finding | None:
    from moderation.models import SpamWord  # the editors' lists

    patterns = _word_patterns(SpamWord.rows())
    if not any(pattern for _, _, pattern in patterns):
        return None
    text = normalise(sub.text)
    for action, kind, pattern in patterns:
        match = pattern.search(text) if pattern else None
        if match:
            return Finding(action, "words", f"{kind} word {match.group(0)!r}")
    return None


def _fingerprint_key(sub: Submission) -> str:
    # A short common reply ("Thanks!", "+1") repeated in another discussion is not spam: a
    # text shorter than SPAM_DUPLICATE_MIN_LENGTH is compared within one discussion only.
    text = normalise(sub.text)
    digest = hashlib.sha256(text.encode()).hexdigest()[:32]
    if len(text) < settings.SPAM_DUPLICATE_MIN_LENGTH:
        where = hashlib.sha256(sub.topic_url.encode()).hexdigest()[:16]
        return f"spam:dup:{sub.author_id}:{where}:{digest}"
    return f"spam:dup:{sub.author_id}:{digest}"


def check_duplicate(sub: Submission) -> Finding | None:
    # Fails open without the cache (core.sharedcache): the other checks and moderation still run.
    if settings.SPAM_DUPLICATE_WINDOW > 0 and cache_or(None, cache.get, _fingerprint_key(sub), what="spam duplicates"):
        minutes = max(1, settings.SPAM_DUPLICATE_WINDOW // 60)
        return Finding(REJECT, "duplicate", f"the same text was posted by you in the last {minutes} minutes")
    return None


def remember(sub: Submission) -> None:
    """Record the text's fingerprint (after it was stored or held), for `check_duplicate`."""
    if settings.SPAM_DUPLICATE_WINDOW > 0:
        cache_or(None, cache.set, _fingerprint_key(sub), 1, settings.SPAM_DUPLICATE_WINDOW, what="spam duplicates")


def akismet_url() -> str:
    base = settings.AKISMET_URL or f"https://{settings.AKISMET_API_KEY}.rest.akismet.com"
    return base.rstrip("/") + "/1.1/comment-check"


def check_akismet(sub: Submission) -> Finding | None:
    if not settings.AKISMET_API_KEY:
        return None
    form = {
        "api_key": settings.AKISMET_API_KEY, "blog": settings.AKISMET_SITE_URL, "user_ip": sub.client.ip,
        "user_agent": sub.client.user_agent, "referrer": sub.client.referrer, "permalink": sub.topic_url,
        "comment_type": "comment", "comment_author": sub.author_name, "comment_content": sub.text,
    }
    request = urllib.request.Request(akismet_url(), data=urllib.parse.urlencode(form).encode(), method="POST",
                                     headers={"User-Agent": "Commons/1.0 | akismet-check",
                                              "Content-Type": "application/x-www-form-urlencoded"})
    try:
        with urllib.request.urlopen(request, timeout=settings.AKISMET_TIMEOUT) as response:  # noqa: S310 (configured URL)
            answer = response.read(64).decode("ascii", "replace").strip()
            tip = response.headers.get("X-akismet-pro-tip", "")
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        logger.warning("Akismet check failed, comment let through: %s", exc.__class__.__name__)
        return None
    if answer == "true":
        return Finding(REJECT if tip == "discard" else HOLD, "akismet", "Akismet says spam")
    if answer != "false":
        logger.warning("Akismet answered %r, comment let through", answer[:20])
    return None


# Local checks first, the remote one last (it runs only when nothing local rejected).
LOCAL_CHECKS: list[Callable[[Submission], Finding | None]] = [check_honeypot, check_links, check_words, check_duplicate]
REMOTE_CHECKS: list[Callable[[Submission], Finding | None]] = [check_akismet]
CHECKS = [*LOCAL_CHECKS, *REMOTE_CHECKS]


def remote_checks_on() -> bool:
    """A remote check would see the text (Akismet has a key)."""
    return bool(settings.AKISMET_API_KEY)


def spam_verdict(sub: Submission, checks=None, found: tuple[Finding, ...] = ()) -> Verdict:
    """Run the checks (`CHECKS`, or those given, after the findings `found` of earlier ones); the
    verdict is the strongest action found."""
    findings: list[Finding] = list(found)
    if any(f.action == REJECT for f in findings):
        checks = ()
    for check in CHECKS if checks is None else checks:
        finding = check(sub)
        if finding is None:
            continue
        findings.append(finding)
        if finding.action == REJECT:
            break
    action = max((f.action for f in findings), key=_STRENGTH.__getitem__, default=ACCEPT)
    return Verdict(action, tuple(findings))


def gate_verdict(sub: Submission, author) -> Verdict | None:
    """The verdict on `author`'s submission, or None for an editor (who skips the checks). The
    permission is asked only when it can change the outcome: a local check found something, or a
    remote check is about to see the text; otherwise the local verdict (ACCEPT) stands."""
    local = spam_verdict(sub, LOCAL_CHECKS)
    remote = remote_checks_on() and local.action != REJECT
    if local.action == ACCEPT and not remote:
        return local
    if can_moderate(author):  # editors skip the checks
        return None
    return spam_verdict(sub, REMOTE_CHECKS, found=local.findings) if remote else local


# --- the gate between a valid submission and its storage (comments.services) -------------------


def submission_of(*, topic, author, text: str) -> Submission:
    return Submission(author_id=author.pk, author_name=author.username, text=text,
                      topic_url=settings.SITE_URL.rstrip("/") + topic.get_absolute_url(), client=current_client.get())


class SpamGate:
    """Registered with comments.services (moderation.apps): REJECT raises `SpamRejected` (400,
    nothing stored), HOLD sends the comment to the Pending queue with the reasons, ACCEPT
    lets it through (its fingerprint is recorded once it is stored: `fingerprint_remember`, the
    task moderation.receivers enqueues on `comment_posted`)."""

    def hold(self, *, topic, author, text, parent):
        sub = submission_of(topic=topic, author=author, text=text)
        verdict = gate_verdict(sub, author)
        if verdict is None:  # an editor
            return None
        if verdict.action == REJECT:
            logger.info("spam rejected (user %s): %s", author.pk, verdict.reason)
            # A refusal says what is wrong; the page in front of it says what was not done ("Not posted:").
            raise SpamRejected(f"This looks like spam ({verdict.reason}).", field="text")
        if verdict.action == HOLD:
            from moderation.services import comment_hold

            held = comment_hold(topic=topic, author=author, text=text, parent=parent, reason=f"spam check: {verdict.reason}")
            remember(sub)
            return held
        return None

    def check_edit(self, *, topic, author, text):
        """An edit runs the same checks as a post; it cannot wait in a queue, so what a post
        would have held is refused too (400, the comment keeps its text). Editors skip the checks,
        as they do when posting."""
        verdict = gate_verdict(submission_of(topic=topic, author=author, text=text), author)
        if verdict is not None and verdict.action != ACCEPT:
            logger.info("spam edit refused (user %s): %s", author.pk, verdict.reason)
            raise SpamRejected(f"This looks like spam ({verdict.reason}).", field="text")  # the page: "Not saved:"


def fingerprint_remember(*, topic_id: int, comment_id: str, author_id: int) -> bool:
    """The `moderation.spam_fingerprint` task (enqueued by moderation.receivers when a comment is
    posted, or edited by its author): remember the text the comment holds now, as its author's,
    for the duplicate check. Idempotent (the same key set again, its window restarted). False
    when the topic or the comment is gone, deleted, or not `author_id`'s."""
    topic = topic_stored(pk=int(topic_id))
    comment = comment_stored(topic=topic, comment_id=str(comment_id)) if topic is not None else None
    if comment is None or comment.status == DELETED or comment.author is None or comment.author.id != int(author_id):
        return False
    remember(Submission(author_id=int(author_id), author_name=comment.author.name, text=comment.text,
                        topic_url=settings.SITE_URL.rstrip("/") + topic.get_absolute_url(), client=None))
    return True
