"""A page read never writes the order index (ranks) of the array strategies: a discussion whose
ranks are not complete (stored before them, or moved in before the move ranked it) is read from
its stored comments, in the right order, and its ranks are written by the upgrade step:
`integrity --repair` (reported first), `comments_backfill`, the end of a move."""

import pytest
from django.core.management import call_command

from comments.managers import manager_for

pytestmark = pytest.mark.django_db


def _unranked(mongo_db, topic):
    """The discussion as a site stored it before ranks: no rank, no `ranked` in its head."""
    manager = manager_for(topic.comment_storage)
    mongo_db[manager.ranks_name].delete_many({"discussion_id": topic.discussion_id})
    head = manager.collection_name if topic.comment_storage == "embedded" else manager.discussions_name
    mongo_db[head].update_one({"_id": topic.discussion_id}, {"$unset": {"ranked": ""}})
    return mongo_db[manager.ranks_name]


def _posted_and_liked(api_client, topic, make_user):
    from comments.services import comment_create, comment_like

    alice, fans = make_user("alice"), [make_user(f"fan{n}") for n in range(3)]
    ids = [comment_create(topic=topic, author=alice, text=f"comment {n}").id for n in range(5)]
    for liked, fan_count in ((ids[1], 3), (ids[3], 1)):
        for fan in fans[:fan_count]:
            comment_like(topic=topic, comment_id=liked, user=fan)
    return ids


def _ids(api_client, topic, **params):
    return [c["id"] for c in api_client.get(f"/api/topics/{topic.slug}/comments/", params).json()["results"]]


@pytest.mark.parametrize("storage,order", [("embedded", "chronological"), ("embedded", "threaded"),
                                           ("bucketed", "chronological")])
def test_a_page_of_an_unranked_discussion_writes_no_rank_and_the_repair_does(mongo_db, api_client, make_topic,
                                                                             make_user, storage, order):
    topic = make_topic(storage, order)
    ids = _posted_and_liked(api_client, topic, make_user)
    ranked_hot = _ids(api_client, topic, order="hot", page_size=10)
    ranks = _unranked(mongo_db, topic)
    hot = _ids(api_client, topic, order="hot", page_size=10)
    assert hot == ranked_hot == [ids[1], ids[3], ids[4], ids[2], ids[0]]  # most liked, then newest
    assert _ids(api_client, topic, order="hot", page_size=2) == hot[:2]
    if order == "threaded":
        assert _ids(api_client, topic, order="threaded", page_size=10) == ids
        assert _ids(api_client, topic, order="chronological", page_size=10) == ids
    assert ranks.count_documents({"discussion_id": topic.discussion_id}) == 0  # the reads wrote nothing

    with pytest.raises(Exception, match="difference"):  # integrity reports the missing order index
        call_command("integrity", "--topic", topic.slug)
    call_command("integrity", "--repair", "--topic", topic.slug)
    assert ranks.count_documents({"discussion_id": topic.discussion_id}) == len(ids)
    call_command("integrity", "--topic", topic.slug)
    assert _ids(api_client, topic, order="hot", page_size=10) == hot


def test_the_backfill_command_writes_the_ranks_of_an_unranked_discussion(mongo_db, api_client, make_topic, make_user):
    topic = make_topic("embedded", "threaded")
    ids = _posted_and_liked(api_client, topic, make_user)
    ranks = _unranked(mongo_db, topic)
    call_command("comments_backfill")
    assert ranks.count_documents({"discussion_id": topic.discussion_id}) == len(ids)
    call_command("integrity", "--topic", topic.slug)
