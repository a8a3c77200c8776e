"""Comment services and selectors: each rule, for every storage strategy."""

import unicodedata

import pytest
import regex
from django.contrib.auth.models import AnonymousUser
from hypothesis import example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from comments import selectors, services, signals
from comments.managers.base import HOT, Comment
from core.errors import Conflict, Forbidden, InvalidInput, NotAuthenticated, NotFound
from core.markdown import markdown_to_text
from core.paging import PageRequest
from core.text import BIDI_CONTROLS
from tests.comments.support import stored

pytestmark = pytest.mark.django_db

# Every (storage, order) a topic can have.


def test_post_and_reply_are_read_back_and_signalled(topic, make_user):
    alice, bob = make_user("alice"), make_user("bob")
    seen = []

    def receiver(sender, topic, comment, author, **kwargs):
        seen.append((sender, topic.pk, comment.id, author.username))

    signals.comment_posted.connect(receiver)
    try:
        root = services.comment_create(topic=topic, author=alice, text="  Hello  \n")
        reply = services.comment_create(topic=topic, author=bob, text="Hi back", parent=root.id)
    finally:
        signals.comment_posted.disconnect(receiver)
    assert root.text == "Hello" and root.parent is None and root.depth == 0 and root.author.name == "alice"
    assert reply.parent == root.id and reply.depth == 1 and reply.path == f"{root.id}/{reply.id}"
    assert seen == [(Comment, topic.pk, root.id, "alice"), (Comment, topic.pk, reply.id, "bob")]
    got = selectors.comment_get(topic=topic, comment_id=reply.id, viewer=None)
    assert (got.id, got.text, got.parent) == (reply.id, "Hi back", root.id)
    assert [c.id for c in selectors.comment_thread(topic=topic, comment_id=root.id)] == [root.id, reply.id]
    assert stored(topic) == 2


@pytest.mark.parametrize("text", ["", "   ", "\n\t ", None, 42, {"$gt": ""}])
def test_empty_or_non_text_is_refused_and_nothing_stored(topic, make_user, text):
    with pytest.raises(InvalidInput) as exc:
        services.comment_create(topic=topic, author=make_user(), text=text)
    assert exc.value.field == "text"
    assert stored(topic) == 0


def test_text_length_limit_counts_stripped_characters(topic, make_user, settings):
    settings.COMMENTS_MAX_TEXT = 10
    user = make_user()
    assert services.comment_create(topic=topic, author=user, text="  " + "x" * 10 + "  ").text == "x" * 10
    with pytest.raises(InvalidInput, match="at most 10 characters") as exc:
        services.comment_create(topic=topic, author=user, text="x" * 11)
    assert exc.value.field == "text"
    assert stored(topic) == 1


@pytest.mark.parametrize("parent", [{"$gt": ""}, ["a"], "ABC", "a/b", "a" * 33, "../x", 5])
def test_malformed_parent_is_invalid_before_any_query(topic, make_user, parent):
    with pytest.raises(InvalidInput) as exc:
        services.comment_create(topic=topic, author=make_user(), text="x", parent=parent)
    assert exc.value.field == "parent"
    assert stored(topic) == 0


def test_unknown_parent_or_parent_of_another_topic(topic, make_topic, make_user):
    user = make_user()
    other = make_topic(topic.comment_storage, topic.comment_order, title="Other")
    foreign = services.comment_create(topic=other, author=user, text="elsewhere")
    for parent in ("zzzzzzzz", foreign.id):
        with pytest.raises(InvalidInput, match="unknown parent") as exc:
            services.comment_create(topic=topic, author=user, text="x", parent=parent)
        assert exc.value.field == "parent"
    assert stored(topic) == 0


def test_no_reply_to_a_removed_comment(topic, make_user, editor):
    root = services.comment_create(topic=topic, author=make_user(), text="x")
    services.comment_status_store(topic=topic, comment_id=root.id, status="removed")
    with pytest.raises(InvalidInput, match="removed"):
        services.comment_create(topic=topic, author=make_user(), text="y", parent=root.id)
    assert stored(topic) == 1


def test_writers_must_be_authenticated_and_active(topic, make_user):
    with pytest.raises(NotAuthenticated):
        services.comment_create(topic=topic, author=AnonymousUser(), text="x")
    with pytest.raises(NotAuthenticated):
        services.comment_create(topic=topic, author=None, text="x")
    with pytest.raises(Forbidden):
        services.comment_create(topic=topic, author=make_user(is_active=False), text="x")
    assert stored(topic) == 0


def test_orders_are_checked_against_the_storage(topic, make_user):
    services.comment_create(topic=topic, author=make_user(), text="x")
    for order in ("nonsense", "", None, "hot", "threaded"):
        if order in ("", None, "hot") or (order == "threaded" and topic.comment_storage != "bucketed"):
            page = selectors.comment_page(topic=topic, order=order, request=PageRequest(), viewer=None)
            assert page.count == 1
            continue
        with pytest.raises(InvalidInput) as exc:
            selectors.comment_page(topic=topic, order=order, request=PageRequest(), viewer=None)
        assert exc.value.field == "order"


def test_bucketed_storage_refuses_threaded_order(make_topic):
    topic = make_topic("bucketed")
    with pytest.raises(InvalidInput, match="bucketed storage supports chronological, newest, hot and following order only"):
        selectors.comment_page(topic=topic, order="threaded", request=PageRequest(), viewer=None)


def test_full_embedded_discussion_is_a_conflict(make_topic, make_user, settings):
    topic = make_topic("embedded", "chronological")
    settings.COMMENTS_EMBEDDED_MAX_BYTES = 2_000
    user = make_user()
    accepted = 0
    with pytest.raises(Conflict, match="discussion is full"):
        for _ in range(100):
            services.comment_create(topic=topic, author=user, text="x" * 200)
            accepted += 1
    assert 0 < accepted < 100 and stored(topic) == accepted


def test_page_beyond_the_last_is_not_found_but_empty_first_page_is_fine(topic, make_user):
    assert selectors.comment_page(topic=topic, request=PageRequest(page=1), viewer=None).items == []
    with pytest.raises(NotFound):
        selectors.comment_page(topic=topic, request=PageRequest(page=2), viewer=None)
    user = make_user()
    for i in range(3):
        services.comment_create(topic=topic, author=user, text=f"c{i}")
    assert len(selectors.comment_page(topic=topic, request=PageRequest(page=2, page_size=2), viewer=None).items) == 1
    with pytest.raises(NotFound):
        selectors.comment_page(topic=topic, request=PageRequest(page=3, page_size=2), viewer=None)


def test_page_of_a_comment_is_the_page_that_lists_it(topic, make_user):
    user = make_user()
    roots = [services.comment_create(topic=topic, author=user, text=f"r{i}") for i in range(4)]
    replies = [services.comment_create(topic=topic, author=user, text=f"re{i}", parent=roots[i % 2].id) for i in range(3)]
    for comment in roots + replies:
        number = selectors.comment_page_of(topic=topic, comment=comment, page_size=3)
        page = selectors.comment_page(topic=topic, request=PageRequest(page=number, page_size=3), viewer=None)
        assert comment.id in [c.id for c in page.items]


# --- moderation and masking -------------------------------------------------------


def test_the_status_primitive_refuses_bad_status_and_unknown_comments(topic, make_user):
    comment = services.comment_create(topic=topic, author=make_user(), text="x")
    with pytest.raises(InvalidInput):
        services.comment_status_store(topic=topic, comment_id=comment.id, status="deleted")
    for bad in ("zzzzzzzz", {"$ne": 1}, "NOPE"):
        with pytest.raises(NotFound):
            services.comment_status_store(topic=topic, comment_id=bad, status="removed")
    with pytest.raises(InvalidInput):
        services.comment_pin_store(topic=topic, comment_id=comment.id, pinned="yes")
    assert selectors.comment_get(topic=topic, comment_id=comment.id).status == "visible"


def test_removed_and_author_only_are_masked_but_keep_their_place(topic, make_user, editor):
    author, other = make_user("author"), make_user("other")
    a = services.comment_create(topic=topic, author=author, text="secret A")
    b = services.comment_create(topic=topic, author=author, text="secret B", parent=a.id)
    services.comment_create(topic=topic, author=other, text="plain")
    services.comment_status_store(topic=topic, comment_id=a.id, status="removed")
    services.comment_status_store(topic=topic, comment_id=b.id, status="author_only")

    def texts(viewer):
        page = selectors.comment_page(topic=topic, request=PageRequest(), viewer=viewer)
        assert page.count == 3 and len(page.items) == 3
        return {c.id: (c.text, c.author.name if c.author else None) for c in page.items}

    for viewer in (None, AnonymousUser(), other):
        seen = texts(viewer)
        assert seen[a.id] == ("[removed]", None) and seen[b.id][1] is None and "secret" not in seen[b.id][0]
    assert texts(author)[a.id] == ("[removed]", None) and texts(author)[b.id] == ("secret B", "author")
    assert texts(editor)[a.id] == ("secret A", "author") and texts(editor)[b.id] == ("secret B", "author")
    assert selectors.comment_get(topic=topic, comment_id=a.id, viewer=other).text == "[removed]"
    assert [c.text for c in selectors.comment_thread(topic=topic, comment_id=a.id, viewer=other)][0] == "[removed]"
    for restored in (a, b):
        assert services.comment_status_store(topic=topic, comment_id=restored.id, status="visible").status != "visible"
    assert texts(other)[a.id] == ("secret A", "author") and texts(other)[b.id] == ("secret B", "author")


def test_pinning(topic, make_user):
    """The pin primitive returns the comment as it was: pinning twice finds it pinned the second time."""
    comment = services.comment_create(topic=topic, author=make_user(), text="x")
    assert services.comment_pin_store(topic=topic, comment_id=comment.id, pinned=True).pinned is False
    assert selectors.comment_get(topic=topic, comment_id=comment.id).pinned is True
    assert services.comment_pin_store(topic=topic, comment_id=comment.id, pinned=True).pinned is True
    services.comment_pin_store(topic=topic, comment_id=comment.id, pinned=False)
    assert selectors.comment_get(topic=topic, comment_id=comment.id).pinned is False


def test_hot_order_lists_pinned_then_most_liked(make_topic, make_user, editor):
    topic = make_topic("document", "chronological")
    assert HOT in selectors.comment_orders(topic=topic)
    users = [make_user() for _ in range(3)]
    a, b, c = (services.comment_create(topic=topic, author=make_user(), text=t) for t in "abc")
    for user in users:
        services.comment_like(topic=topic, comment_id=b.id, user=user)
    services.comment_like(topic=topic, comment_id=a.id, user=users[1])
    services.comment_pin_store(topic=topic, comment_id=c.id, pinned=True)
    page = selectors.comment_page(topic=topic, order=HOT, request=PageRequest(), viewer=None)
    assert [x.id for x in page.items] == [c.id, b.id, a.id]


# --- likes ----------------------------------------------------------------------


def test_like_is_idempotent_and_unlike_too(topic, make_user):
    author, fan, other = make_user("author"), make_user("fan"), make_user("other")
    comment = services.comment_create(topic=topic, author=author, text="x")
    liked = []
    signals.comment_liked.connect(receiver := lambda sender, comment, user, **kw: liked.append(user.username))
    try:
        assert services.comment_like(topic=topic, comment_id=comment.id, user=fan).likes == 1
        assert services.comment_like(topic=topic, comment_id=comment.id, user=fan).likes == 1
        services.comment_like(topic=topic, comment_id=comment.id, user=other)
        stored = selectors.comment_get(topic=topic, comment_id=comment.id)
        assert stored.likes == 2 and stored.latest_likers == ["fan", "other"]
        assert services.comment_unlike(topic=topic, comment_id=comment.id, user=fan).likes == 1
        assert services.comment_unlike(topic=topic, comment_id=comment.id, user=fan).likes == 1
        stored = selectors.comment_get(topic=topic, comment_id=comment.id)
        assert stored.likes == 1 and stored.latest_likers == ["other"]
        services.comment_like(topic=topic, comment_id=comment.id, user=fan)  # again: counted, not signalled
        assert selectors.comment_get(topic=topic, comment_id=comment.id).likes == 2
    finally:
        signals.comment_liked.disconnect(receiver)
    assert liked == ["fan", "other"]
    page = selectors.comment_page(topic=topic, request=PageRequest(), viewer=fan)
    assert page.extra["liked"] == {comment.id}
    assert selectors.comment_page(topic=topic, request=PageRequest(), viewer=author).extra["liked"] == set()


def test_like_rules(topic, make_user, editor):
    author, fan = make_user("author"), make_user("fan")
    comment = services.comment_create(topic=topic, author=author, text="x")
    with pytest.raises(NotAuthenticated):
        services.comment_like(topic=topic, comment_id=comment.id, user=AnonymousUser())
    for bad in ("zzzzzzzz", {"$gt": ""}):
        with pytest.raises(NotFound):
            services.comment_like(topic=topic, comment_id=bad, user=fan)
    services.comment_status_store(topic=topic, comment_id=comment.id, status="author_only")
    with pytest.raises(NotFound):
        services.comment_like(topic=topic, comment_id=comment.id, user=fan)
    services.comment_status_store(topic=topic, comment_id=comment.id, status="removed")
    with pytest.raises(InvalidInput):
        services.comment_like(topic=topic, comment_id=comment.id, user=fan)
    assert selectors.comment_get(topic=topic, comment_id=comment.id, viewer=editor).likes == 0


# The documented rule (core/text.py, docs/security.md), code point by code point: invisible is
# Default_Ignorable_Code_Point (reserved code points of its ranges too), White_Space, a format
# control (Cf), or one of the two symbols drawn blank; a combining mark shows only on a base.
_INVISIBLE = regex.compile(r"[\p{Default_Ignorable_Code_Point}\p{White_Space}\p{Cf}\u2800\U0001d159]")


def _shows(char: str) -> bool:
    return _INVISIBLE.match(char) is None and not unicodedata.category(char).startswith("M")


@hypothesis_settings(max_examples=20)
@given(text=st.text(min_size=1, max_size=60))
@example(text="0\U000e0000")  # a reserved code point of the tags block: default-ignorable, trimmed
@example(text="0\u3164")  # a Hangul filler: a letter, default-ignorable, trimmed
@example(text="\u0301a")  # a leading mark with no base shows nothing: trimmed
@example(text="a\ufe0f b\u0301")  # a variation selector and a mark on a base stay with it
@example(text=">")  # a quote marker alone renders nothing: empty
def test_any_text_is_stored_trimmed_or_refused(make_topic, make_user, text):
    # The rules of core/text.py: controls, lone surrogates and bidi overrides are refused;
    # text with nothing visible is empty; stored text is the input (newlines normalised, BOM and
    # zero-width spaces dropped) trimmed to whole grapheme clusters from the first to the last
    # that shows something, every visible code point kept; a text whose rendered Markdown shows
    # nothing (a quote marker or a rule alone) is empty too.
    # Each example posts to a new topic, so examples never see each other's comments.
    topic = make_topic("document", "threaded", title="Hypothesis")
    user = make_user()
    normal = text.replace("\r\n", "\n").replace("\r", "\n").replace("\ufeff", "").replace("\u200b", "")
    refused = any((unicodedata.category(c) in ("Cc", "Cs") and c not in "\n\t") or c in BIDI_CONTROLS for c in normal)
    visible = [c for c in normal if _shows(c)]
    if refused or not visible or not any(_shows(c) for c in markdown_to_text(normal)):
        with pytest.raises(InvalidInput):
            services.comment_create(topic=topic, author=user, text=text)
        assert stored(topic) == 0
        return
    comment = services.comment_create(topic=topic, author=user, text=text)
    saved = selectors.comment_get(topic=topic, comment_id=comment.id).text
    clusters = regex.findall(r"\X", saved)
    assert saved in normal and [c for c in saved if _shows(c)] == visible
    assert any(_shows(c) for c in clusters[0]) and any(_shows(c) for c in clusters[-1])
