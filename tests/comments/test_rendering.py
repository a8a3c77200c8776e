"""An anonymous visitor's comments come from a per-process LRU keyed by everything the comment
template reads (comments/rendering.py): the same HTML as rendering it, whatever the comment, and
never a stale one after it changes."""

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from django.contrib.auth.models import AnonymousUser
from django.contrib.humanize.templatetags import humanize
from django.template import engines
from django.test import RequestFactory
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from comments import rendering, services
from comments.managers.base import AUTHOR_ONLY, DELETED, FORGOTTEN, REMOVED, VISIBLE, Author, Comment

pytestmark = pytest.mark.django_db

CACHED = engines["django"].from_string(
    "{% load comment_tags %}{% comment_article comment depth=depth highlight=highlight %}")
DIRECT = engines["django"].from_string('{% include "comments/_comment.html" with depth=depth highlight=highlight %}')
NOW = datetime.now(UTC).replace(microsecond=0)

names = st.sampled_from(["alice", "bob", "Ünïcode", "a&b<c>"])
authors = st.one_of(st.builds(Author, id=st.integers(1, 5), name=names), st.builds(Author, id=st.none(), name=names),
                    st.just(FORGOTTEN), st.none())
comments = st.builds(
    Comment, id=st.sampled_from(["abc1", "xyz9"]), discussion_id=st.just(1),
    parent=st.sampled_from([None, "p1"]), path=st.just("abc1"), depth=st.integers(0, 3), sort_key=st.just("k"),
    author=authors, text=st.sampled_from(["plain", "two\nlines", "<b>x</b>", ""]),
    posted=st.sampled_from([NOW - timedelta(seconds=30), NOW - timedelta(hours=5), NOW - timedelta(days=40)]),
    status=st.sampled_from([VISIBLE, REMOVED, DELETED, AUTHOR_ONLY, "pending"]), pinned=st.booleans(),
    likes=st.integers(0, 3), latest_likers=st.lists(names, max_size=7),
    html=st.sampled_from(["", "<p>rendered</p>", "<p>other &amp; more</p>"]),
    edited=st.sampled_from([None, NOW - timedelta(minutes=3)]), reply_to=st.sampled_from([None, "bob"]),
    parent_status=st.sampled_from([None, VISIBLE, DELETED]),
)


def _render(template, topic, comment, *, path="/t/x/", depth=0, indent=False, highlight=False, continued=False):
    comment.continue_thread = continued
    request = RequestFactory().get(path)
    request.user = AnonymousUser()
    return template.render({"topic": topic, "comment": comment, "depth": depth, "indent": indent,
                            "highlight": highlight, "here": path, "liked": set(), "muted": set()}, request)


@hsettings(max_examples=60, deadline=None)
@given(comment=comments, depth=st.integers(0, 3), indent=st.booleans(), highlight=st.booleans(),
       continued=st.booleans(), path=st.sampled_from(["/t/x/", "/t/x/?page=2&order=threaded"]))
def test_an_anonymous_comment_from_the_lru_is_the_comment_rendered(topic, comment, depth, indent, highlight, continued,
                                                                    path):
    # One instant for the whole example: "30 seconds ago" read a second later is another text
    # (and another key), which would compare two clocks, not the LRU with the template.
    # Each example is another comment: a stored comment's text changes only with its version
    # (`edited`, `status`), which the key holds, while examples reuse ids and versions.
    rendering.forget()
    with mock.patch.object(humanize, "datetime", _Frozen):
        expected = _render(DIRECT, topic, comment, depth=depth, indent=indent, highlight=highlight, continued=continued)
        # Rendered, then from the LRU, on pages with other addresses: the same HTML.
        for page in (path, "/t/x/?page=9"):
            assert _render(CACHED, topic, comment, path=page, depth=depth, indent=indent, highlight=highlight,
                           continued=continued) == expected


class _Frozen(datetime):
    """`datetime` as django.contrib.humanize reads the clock, stopped where this module read NOW."""

    instant = datetime.now(UTC)

    @classmethod
    def now(cls, tz=None):
        return cls.instant.astimezone(tz) if tz is not None else cls.instant.replace(tzinfo=None)


def test_a_change_to_any_input_is_a_new_key(topic):
    """Every input but the text itself: a text changes only with an edit (`edited`) or a deletion
    (`status`), so the key holds those and does not hash the text."""
    rendering.forget()
    base = Comment(id="abc1", discussion_id=1, parent="p1", path="p1/abc1", depth=1, sort_key="k",
                   author=Author(id=1, name="alice"), text="t", html="<p>t</p>", posted=NOW - timedelta(hours=2))
    changed = [replace(base, likes=1), replace(base, latest_likers=["bob"]), replace(base, status=REMOVED),
               replace(base, html="<p>u</p>", edited=NOW), replace(base, pinned=True),
               replace(base, author=Author(id=1, name="alicia")), replace(base, reply_to="bob"),
               replace(base, parent_status=DELETED), replace(base, posted=NOW - timedelta(days=3))]
    first = _render(CACHED, topic, base)
    assert _render(CACHED, topic, base) == first  # from the LRU
    for comment in changed:
        assert _render(CACHED, topic, comment) == _render(DIRECT, topic, comment) != first, comment
    assert _render(CACHED, topic, base, depth=2) != first and _render(CACHED, topic, base, highlight=True) != first


def test_the_timezone_language_and_topic_are_in_the_key(topic):
    from types import SimpleNamespace

    from django.utils import timezone, translation

    comment = Comment(id="abc1", discussion_id=1, parent=None, path="abc1", depth=0, sort_key="k",
                      author=Author(id=1, name="alice"), text="t", html="<p>t</p>", posted=NOW - timedelta(days=2))
    first = _render(CACHED, topic, comment)
    with timezone.override("Asia/Tokyo"):
        assert _render(CACHED, topic, comment) == _render(DIRECT, topic, comment) != first
    with translation.override("fr"):
        assert _render(CACHED, topic, comment) == _render(DIRECT, topic, comment)
    other = SimpleNamespace(slug="another-topic")  # the one field of the topic the template reads for them
    assert _render(CACHED, other, comment) == _render(DIRECT, other, comment) != first


def test_a_request_with_messages_or_muted_authors_is_rendered_each_time(topic):
    comment = Comment(id="abc1", discussion_id=1, parent=None, path="abc1", depth=0, sort_key="k",
                      author=Author(id=1, name="alice"), text="t", html="<p>t</p>", posted=NOW)
    request = RequestFactory().get("/t/x/")
    request.user = AnonymousUser()
    CACHED.render({"topic": topic, "comment": comment, "depth": 0, "messages": ["a note"]}, request)
    CACHED.render({"topic": topic, "comment": comment, "depth": 0, "muted": {1}}, request)
    assert rendering._kept == {}
    CACHED.render({"topic": topic, "comment": comment, "depth": 0}, request)
    assert len(rendering._kept) == 1


def test_signed_in_viewers_are_rendered_each_time(topic, alice):
    rendering.forget()
    comment = services.comment_create(topic=topic, author=alice, text="mine")
    request = RequestFactory().get("/t/x/")
    request.user = alice
    CACHED.render({"topic": topic, "comment": comment, "depth": 0, "liked": set(), "muted": set(), "here": "/"}, request)
    assert rendering._kept == {}


def test_an_anonymous_visitor_sees_each_change_at_once(client, topic, alice, make_user, editor):
    rendering.forget()
    comment = services.comment_create(topic=topic, author=alice, text="first words")
    url = f"/t/{topic.slug}/"
    assert "first words" in client.get(url).content.decode()
    bob = make_user("bob")
    services.comment_like(topic=topic, comment_id=comment.id, user=bob)
    assert "1 like" in client.get(url).content.decode()
    services.comment_create(topic=topic, author=bob, text="an answer", parent=comment.id)  # keeps its placeholder
    services.comment_edit(topic=topic, comment_id=comment.id, text="second words", user=alice)
    html = client.get(url).content.decode()
    assert "second words" in html and "first words" not in html
    services.comment_status_store(topic=topic, comment_id=comment.id, status=REMOVED)
    html = client.get(url).content.decode()
    assert "second words" not in html and "[removed]" in html


def test_the_edited_time_is_relative_and_the_lru_follows_it_as_it_passes(topic):
    rendering.forget()
    comment = Comment(id="abc1", discussion_id=1, parent=None, path="abc1", depth=0, sort_key="k",
                      author=Author(id=1, name="alice"), text="t", html="<p>t</p>", posted=NOW - timedelta(days=3),
                      edited=NOW)
    shown = []
    for later in (timedelta(seconds=0), timedelta(minutes=2)):  # "3 days ago" both times; the edit ages
        with mock.patch.object(humanize, "datetime", _Frozen), mock.patch.object(_Frozen, "instant", NOW + later):
            direct = _render(DIRECT, topic, comment)
            assert _render(CACHED, topic, comment) == direct
            shown.append(direct)
    assert 'title="' in shown[0] and ">now</time>" in shown[0] and ">2\xa0minutes ago</time>" in shown[1]


def test_a_cached_anonymous_page_formats_no_time_and_hashes_no_text_per_comment(client, topic, alice):
    """The key of a kept comment costs no `naturaltime` and no hash of its text: the age's step
    names the relative time, the version names the text (comments/rendering.py)."""
    for i in range(5):
        services.comment_create(topic=topic, author=alice, text=f"words {i}")
    url = f"/t/{topic.slug}/"
    client.get(url)
    calls = []
    real = rendering.naturaltime

    def counted(value):
        calls.append(value)
        return real(value)

    with mock.patch.object(rendering, "naturaltime", counted), mock.patch("hashlib.blake2b") as blake2b:
        html = client.get(url).content.decode()
    assert "words 4" in html
    assert calls == [] and not blake2b.called


def test_a_cached_anonymous_page_reads_the_clock_timezone_and_language_once(client, topic, alice):
    """The per-request parts of every comment's key (the clock, the time zone, the language, the
    script prefix) are read once per page render, not once per comment."""
    for i in range(5):
        services.comment_create(topic=topic, author=alice, text=f"words {i}")
    url = f"/t/{topic.slug}/"
    client.get(url)
    real = rendering.timezone.get_current_timezone_name
    with mock.patch.object(rendering.timezone, "get_current_timezone_name", side_effect=real) as zone:
        html = client.get(url).content.decode()
    assert "words 4" in html and html.count('class="comment ') >= 5
    assert zone.call_count <= 2  # the comments' one read, and the SEO head's key (topics_seo.topic_seo)


def test_the_kept_anonymous_view_is_never_served_to_a_signed_in_viewer_nor_theirs_to_a_visitor(client, topic, alice,
                                                                                               make_user):
    """One process, one page, three readers in turn: the visitor's comments come from the LRU,
    the signed-in reader's are theirs (Like and Reply forms, their CSRF token), and the next
    visitor gets the visitor's view again, not the signed-in reader's."""
    services.comment_create(topic=topic, author=alice, text="a shared comment")
    url = f"/t/{topic.slug}/"
    anonymous = client.get(url).content.decode()
    assert "a shared comment" in anonymous and 'name="csrfmiddlewaretoken"' not in anonymous
    bob = make_user("bob")
    client.force_login(bob)
    signed_in = client.get(url).content.decode()
    assert 'data-in-place="like"' in signed_in and 'data-in-place="reply"' in signed_in
    client.logout()
    again = client.get(url).content.decode()
    assert 'data-in-place="like"' not in again and 'data-in-place="reply"' not in again
    assert 'name="csrfmiddlewaretoken"' not in again and "bob" not in again.split('id="comments"')[1]


def test_a_cached_anonymous_page_asks_once_whether_the_request_has_messages(client, topic, alice):
    """Whether the viewer is anonymous with no messages and no muted authors is the request's
    answer, asked once per page render (the messages storage loads itself to answer)."""
    from django.contrib.messages.storage.base import BaseStorage

    for i in range(5):
        services.comment_create(topic=topic, author=alice, text=f"words {i}")
    url = f"/t/{topic.slug}/"
    client.get(url)
    with mock.patch.object(BaseStorage, "__len__", autospec=True, side_effect=BaseStorage.__len__) as size:
        html = client.get(url).content.decode()
    assert "words 4" in html and rendering._kept
    assert size.call_count <= 3  # the page's own {% if messages %} and the comments' one question


@hsettings(max_examples=300, deadline=None)
@given(posted=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)),
       ages=st.lists(st.floats(0, 4e8), min_size=2, max_size=2))
def test_the_age_step_names_the_relative_time(posted, ages):
    """Two clocks at the same step of a time's age show the same `naturaltime` text (away from the
    exact second a day turns, where the key and the text are read a moment apart anyway)."""
    texts, steps = [], []
    for age in ages:
        now = posted + timedelta(seconds=age)
        if age > 86400 and (now - posted.replace(microsecond=0)).total_seconds() % 86400 < 1:
            return
        with mock.patch.object(_Frozen, "instant", now), mock.patch.object(humanize, "datetime", _Frozen):
            texts.append(humanize.naturaltime(posted))
        steps.append(rendering._age_step(posted, now))
    if steps[0] == steps[1]:
        assert texts[0] == texts[1], (steps, texts)


# The page's list as a {% for %} loop rendered it before `comment_articles` (one tag for the list).
LOOP = engines["django"].from_string("""{% load comment_tags %}{% for comment in items %}
    {% if comment.id in pinned_ids %}
    <article class="comment {% if indent %}{{ comment.depth|depth_class }}{% else %}d0{% endif %} pinned stub" data-depth="{% if indent %}{{ comment.depth }}{% else %}0{% endif %}" aria-label="Pinned comment, shown above">
      <p class="meta"><a href="#c-{{ comment.id }}">Pinned comment{% if comment.author %} by {{ comment.author.name }}{% endif %}: shown above ↑</a></p>
    </article>
    {% elif indent %}{% comment_article comment depth=comment.depth highlight=False %}
    {% else %}{% comment_article comment depth=0 highlight=False %}{% endif %}
  {% endfor %}""")  # noqa: E501
LIST = engines["django"].from_string("{% load comment_tags %}{% comment_articles items %}")


@hsettings(max_examples=40, deadline=None)
@given(items=st.lists(comments, min_size=1, max_size=4), indent=st.booleans(), pin_first=st.booleans(),
       signed_in=st.booleans())
def test_the_list_tag_renders_what_the_loop_rendered(topic, alice, items, indent, pin_first, signed_in):
    """Byte for byte, pinned stubs, indented and flat pages, anonymous (from the LRU) and signed in."""
    items = [replace(c, id=f"c{n}") for n, c in enumerate(items)]
    request = RequestFactory().get("/t/x/")
    request.user = alice if signed_in else AnonymousUser()
    context = {"topic": topic, "items": items, "indent": indent, "pinned_ids": {"c0"} if pin_first else set(),
               "here": "/t/x/", "liked": set(), "muted": set()}
    rendering.forget()

    def render(template):  # a signed-in viewer's forms carry a CSRF token masked anew each time
        return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", template.render(context, request))

    with mock.patch.object(humanize, "datetime", _Frozen):
        expected = render(LOOP)
        assert render(LIST) == expected
        assert render(LIST) == expected  # again, from the LRU for an anonymous viewer
