"""An embedded discussion at or past COMMENTS_EMBEDDED_AUTO_MIGRATE_AT moves by itself to the
strategy that keeps its order, at the next post into it: also one that grew past the
threshold under a higher setting (the default came down from 10,000 to what the measurement
of a post's cost gives, docs/configuration.md)."""

import pytest

from topics.models import Topic

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("order,target", [("chronological", "bucketed"), ("threaded", "document")])
def test_a_discussion_already_past_the_threshold_moves_at_its_next_post(settings, api_client, make_topic, make_user,
                                                                        order, target):
    from comments.services import comment_create

    settings.COMMENTS_EMBEDDED_AUTO_MIGRATE_AT = 0  # grown under a setting that never moved it
    topic, alice, bob = make_topic("embedded", order), make_user("alice"), make_user("bob")
    posted = [comment_create(topic=topic, author=alice, text=f"comment {n}").id for n in range(15)]
    settings.COMMENTS_EMBEDDED_AUTO_MIGRATE_AT = 12  # now past it, and not at a round number of it
    api_client.force_authenticate(bob)
    answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "the next post"}, format="json")
    assert answer.status_code == 201, answer.content
    topic = Topic.objects.get(pk=topic.pk)
    assert (topic.comment_storage, topic.comment_order) == (target, order)
    page = api_client.get(f"/api/topics/{topic.slug}/comments/", {"order": "chronological", "page_size": 50}).json()
    assert [c["id"] for c in page["results"]] == [*posted, answer.json()["id"]]
