"""Search matches a word's singular and plural (and other inflected) forms: the index stores
Snowball stems and a query is stemmed the same way; an index written before stemming keeps
answering until `comments_search_rebuild` rewrites it."""

import io

import pytest
from django.core.management import call_command

from comments.services import comment_create
from search.managers import CommentSearchManager, words

pytestmark = pytest.mark.django_db


@pytest.fixture
def posted(make_topic, make_user):
    topic = make_topic("document", title="Rain barrels and buckets", body="Collecting rain.")
    author = make_user("ana")
    one = comment_create(topic=topic, author=author, text="I carry water in a bucket")
    many = comment_create(topic=topic, author=author, text="Three buckets of rain today")
    other = comment_create(topic=topic, author=author, text="Nothing about containers here")
    return {"topic": topic, "one": one, "many": many, "other": other}


def _found(api_client, q):
    body = api_client.get("/api/search/", {"q": q}).json()
    return {c["id"] for c in body["comments"]["results"]}, [t["slug"] for t in body["topics"]["results"]]


@pytest.mark.parametrize("q", ["bucket", "buckets", "BUCKETS", "bucket's"])
def test_singular_and_plural_find_the_same_comments_and_topics(api_client, posted, q):
    comments, topics = _found(api_client, q)
    assert comments == {posted["one"].id, posted["many"].id}
    assert topics == [posted["topic"].slug]


def test_several_words_match_by_stem_and_the_page_marks_every_form(client, api_client, posted):
    comments, _ = _found(api_client, "rains buckets")
    assert comments == {posted["many"].id}
    html = client.get("/search/", {"q": "buckets"}).content.decode()
    assert "in a <mark>bucket</mark>" in html and "Three <mark>buckets</mark> of rain" in html


def test_an_index_written_before_stemming_answers_until_rebuilt(api_client, posted):
    search = CommentSearchManager()
    topic = posted["topic"]
    # The entries as the previous version wrote them: the words as written, unstemmed.
    for key in ("one", "many"):
        comment = posted[key]
        search.collection.update_one({"_id": f"{topic.discussion_id}:{comment.id}"},
                                     {"$set": {"w": words(comment.text)}})
    both = {posted["one"].id, posted["many"].id}
    assert _found(api_client, "buckets")[0] == both  # "buckets" as typed, and the stem "bucket"
    assert _found(api_client, "bucket")[0] == {posted["one"].id}  # the old "buckets" entry waits for the rebuild
    call_command("comments_search_rebuild", topic.slug, stdout=io.StringIO())
    entry = search.entries(discussion_id=topic.discussion_id, comment_ids=[posted["many"].id])[posted["many"].id]
    assert "bucket" in entry["w"] and "buckets" not in entry["w"]
    assert _found(api_client, "buckets")[0] == _found(api_client, "bucket")[0] == both


def test_a_word_is_stemmed_once_per_process_however_many_posts_hold_it(monkeypatch, posted, make_user):
    """The Snowball stemmer runs once per distinct word: a later post's common words are remembered."""
    from search import managers

    stemmed: list[str] = []

    class Counting:
        def stemWord(self, word):  # noqa: N802 (snowballstemmer's name)
            stemmed.append(word)
            return word

    monkeypatch.setattr(managers._local, "stemmer", Counting(), raising=False)
    managers.stem.cache_clear()
    try:
        author = make_user("bea")
        comment_create(topic=posted["topic"], author=author, text="Buckets of rain, buckets of water")
        comment_create(topic=posted["topic"], author=author, text="More rain in the buckets")
    finally:
        managers.stem.cache_clear()  # the counting stemmer's answers must not outlive the test
    assert sorted(stemmed) == sorted(set(stemmed))  # no word stemmed twice
    assert {"buckets", "rain", "water", "more"} <= set(stemmed)
