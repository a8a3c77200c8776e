"""What one authenticated API post sends to MongoDB, counted with pymongo's command monitoring
(`core.mongo.monitored`): its consequences, run in the request without a broker, read back
nothing the post itself just stored."""

import uuid

import pytest

from bench.counting import SentCommands
from core.mongo import monitored

pytestmark = pytest.mark.django_db


def _post(api_client, topic, text):
    commands = SentCommands()
    with monitored([commands]):
        answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": text}, format="json")
    assert answer.status_code == 201, answer.content
    return answer.json()["id"], commands.sent


def test_a_posts_delivery_is_lent_the_activity_it_stored(api_client, topic, alice, make_user):
    from social.services import follow_create

    bob = make_user("bob")
    follow_create(follower=bob, followee=alice)
    api_client.force_authenticate(alice)
    _post(api_client, topic, "warm up")
    posted, sent = _post(api_client, topic, "counted")
    assert sent[("insert", "social_activities")] == 1
    assert sent[("find", "social_activities")] == 0, sent  # the delivery task's read of what was just inserted
    # ... and the delivery happened, from the lent activity: the follower's feed shows the post.
    api_client.force_authenticate(bob)
    feed = api_client.get("/api/feed/").json()["results"]
    assert [a["url"].rsplit("/", 2)[-2] for a in feed if a["type"] == "comment"][:1] == [posted]


def test_a_post_by_an_author_without_followers_reads_no_follower_ids(api_client, topic, alice, make_user):
    from social.services import follow_create

    api_client.force_authenticate(alice)
    _post(api_client, topic, "warm up")
    _, sent = _post(api_client, topic, "nobody follows me")
    assert sent[("find", "social_follow_lists")] == 1, sent  # the heads' counts, not the ids
    # A follower makes the delivery read the ids, and the feed shows the next post.
    bob = make_user("bob")
    follow_create(follower=bob, followee=alice)
    posted, sent = _post(api_client, topic, "now someone does")
    assert sent[("find", "social_follow_lists")] == 2, sent
    api_client.force_authenticate(bob)
    feed = api_client.get("/api/feed/").json()["results"]
    assert [a["url"].rsplit("/", 2)[-2] for a in feed if a["type"] == "comment"][:1] == [posted]


def test_a_post_reads_its_authors_restrictions_once_and_a_ban_still_refuses(api_client, topic, alice, editor):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from moderation.models import UserModeration

    api_client.force_authenticate(alice)
    with CaptureQueriesContext(connection) as queries:
        answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "checked once"}, format="json")
    assert answer.status_code == 201, answer.content
    table = UserModeration._meta.db_table
    reads = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT") and f'FROM "{table}"' in q["sql"]]
    assert len(reads) == 1, reads  # the write check's and the submission gate's, once
    # Read per post, not kept: a ban made after one post refuses the next.
    api_client.force_authenticate(editor)
    assert api_client.post("/api/moderation/bans/", {"username": "alice"}, format="json").status_code == 201
    api_client.force_authenticate(alice)
    refused = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "after the ban"}, format="json")
    assert refused.status_code == 403, refused.content


def test_a_token_post_reads_its_authors_restrictions_with_the_token_and_a_ban_still_refuses(topic, alice, editor):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    from moderation.models import UserModeration

    token = Token.objects.create(user=alice)
    writer = APIClient()
    writer.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    table = UserModeration._meta.db_table
    with CaptureQueriesContext(connection) as queries:
        answer = writer.post(f"/api/topics/{topic.slug}/comments/", {"text": "with my token"}, format="json")
    assert answer.status_code == 201, answer.content
    reads = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT") and f'"{table}"' in q["sql"]]
    assert len(reads) == 1 and '"authtoken_token"' in reads[0], reads  # the token's query joins it
    with CaptureQueriesContext(connection) as queries:  # a read with the token joins nothing more
        assert writer.get(f"/api/topics/{topic.slug}/comments/").status_code == 200
    assert not [q for q in queries.captured_queries if f'"{table}"' in q["sql"]]
    editor_client = APIClient()
    editor_client.force_authenticate(editor)
    assert editor_client.post("/api/moderation/bans/", {"username": "alice"}, format="json").status_code == 201
    refused = writer.post(f"/api/topics/{topic.slug}/comments/", {"text": "after the ban"}, format="json")
    assert refused.status_code == 403, refused.content
    stranger = APIClient()
    stranger.credentials(HTTP_AUTHORIZATION="Token not-a-token")  # DRF's answer to an unknown token
    unknown = stranger.post(f"/api/topics/{topic.slug}/comments/", {"text": "t"}, format="json")
    assert unknown.status_code == 401 and unknown["WWW-Authenticate"] == "Token", unknown.content


@pytest.mark.parametrize("storage", ["bucketed", "embedded"])
def test_a_posts_rank_is_one_insert_and_a_roll_forward_keeps_it(api_client, make_topic, alice, storage):
    from comments.managers import manager_for

    topic = make_topic(storage)
    api_client.force_authenticate(alice)
    _post(api_client, topic, "warm up")
    posted, sent = _post(api_client, topic, "ranked")
    ranks = manager_for(storage).ranks_name
    assert sent[("insert", ranks)] == 1 and sent[("update", ranks)] == 0, sent
    # The rank written again (a roll-forward of the same post) is kept, not doubled nor refused.
    manager = manager_for(storage)
    comment = manager.get(discussion_id=topic.discussion_id, comment_id=posted)
    stored = manager.ranks.find_one({"_id": manager.rank_id(topic.discussion_id, posted)})
    manager.rank_stored(comment)
    assert manager.ranks.count_documents({"discussion_id": topic.discussion_id}) == 2
    assert manager.ranks.find_one({"_id": manager.rank_id(topic.discussion_id, posted)}) == stored


def test_a_post_parses_its_markdown_once_and_stores_what_a_fresh_render_gives(api_client, topic, alice, monkeypatch):
    from markdown_it import MarkdownIt

    from core import markdown

    parsed = []
    original = MarkdownIt.parse

    def parse(self, src, env=None):
        parsed.append(src)
        return original(self, src, env)

    monkeypatch.setattr(MarkdownIt, "parse", parse)
    api_client.force_authenticate(alice)
    text = f"a **new** text with a link https://example.org/{uuid.uuid4().hex}"
    answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": text}, format="json")
    assert answer.status_code == 201, answer.content
    # Its emptiness check, search entry and feed excerpt (its plain words), its link count and its
    # stored html (a text without "@": the same HTML whoever exists) share one parse.
    assert parsed == [text], parsed
    markdown._rendered.cache_clear()
    markdown._parsed.cache_clear()
    assert answer.json()["html"] == markdown.render_markdown(text, known_usernames=lambda names: set())


def test_a_follower_in_a_continuation_gets_the_post_though_the_heads_count_lags_at_0(api_client, topic, alice,
                                                                                    make_user, settings):
    """An append to a continuation document raises the head's count in a second write: a process
    stopped between the two leaves the head saying 0 followers (those of the head itself having all
    left) while a continuation lists one. The delivery then reads the ids, and the follower gets
    the post."""
    from social.managers import FOLLOWERS, FollowListManager
    from social.services import follow_create, follow_delete

    settings.SOCIAL_IDS_PER_DOC = 2
    first, second, carol = make_user("first"), make_user("second"), make_user("carol")
    for user in (first, second, carol):  # the head holds two ids, carol goes to a continuation
        follow_create(follower=user, followee=alice)
    for user in (first, second):
        follow_delete(follower=user, followee=alice)
    lists = FollowListManager()
    lists.collection.update_one({"_id": lists.head_id(alice.pk, FOLLOWERS)}, {"$set": {"count": 0}})  # the lost write
    api_client.force_authenticate(alice)
    posted, _ = _post(api_client, topic, "carol should see this")
    api_client.force_authenticate(carol)
    feed = api_client.get("/api/feed/").json()["results"]
    assert [a["url"].rsplit("/", 2)[-2] for a in feed if a["type"] == "comment"][:1] == [posted]
