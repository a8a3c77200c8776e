"""Writes and reads that a sharded cluster targets by the shard key name all of it: the
notification group upsert names `r`, a follow-list removal names (owner, kind, seq), the
delivery's activity read names the author (MongoDB 7.0 refuses an upsert or a findAndModify
without the full shard key; a read without it is a broadcast to every shard)."""

import pytest

from core.managers import declared_shard_keys
from tests.contract.test_shard_targeting import RecordingDB

pytestmark = pytest.mark.django_db


def _full_key(filter: dict, key: dict) -> bool:
    return all(field in filter and not isinstance(filter[field], dict) for field in key)


def test_notification_group_upserts_name_the_recipient(mongo_db):
    from notifications.managers import NotificationManager
    from social.managers.edges import now_ms

    recorder = RecordingDB(mongo_db)
    notes = NotificationManager(db=recorder, read_db=recorder)
    for event in ("e1", "e2", "e1"):
        notes.add(recipient=7, kind="like", target="x", subject="", actor_id=1, actor="a", event=event, url="/",
                  title="", at=now_ms())
    key = declared_shard_keys()["notifications"]
    upserts = [f for name, op, f in recorder.writes if name == "notifications" and op == "find_one_and_update"]
    assert upserts and all(_full_key(f, key) for f in upserts), upserts


def test_follow_list_removal_names_owner_kind_and_seq(mongo_db, settings):
    from social.managers import FOLLOWERS, FollowListManager

    settings.SOCIAL_IDS_PER_DOC = 2
    recorder = RecordingDB(mongo_db)
    lists = FollowListManager(db=recorder, read_db=recorder)
    for member in range(1, 6):
        lists.append(owner=42, kind=FOLLOWERS, member=member)
    for member in (1, 4, 5):
        assert lists.remove(owner=42, kind=FOLLOWERS, member=member)
    key = declared_shard_keys()["social_follow_lists"]
    pulls = [f for name, op, f in recorder.writes if name == "social_follow_lists" and op == "find_one_and_update"]
    assert pulls and all(_full_key(f, key) for f in pulls), pulls
    assert [i for d in lists.documents(owner=42, kind=FOLLOWERS) for i in d["ids"]] == [2, 3]


def test_the_delivery_reads_its_activity_by_id_and_author(monkeypatch, make_user):
    from social.feeds.log import ActivityLogManager
    from social.services import activity_deliver, activity_topic_published

    reads = []
    real = ActivityLogManager.get

    def get(self, activity_id, **kwargs):
        reads.append(kwargs)
        return real(self, activity_id, **kwargs)

    monkeypatch.setattr(ActivityLogManager, "get", get)
    author = make_user("author")

    class Topic:
        pk, slug, title, announced = None, "t", "T", None

    Topic.author = author
    stored = activity_topic_published(topic=Topic())
    assert reads == []  # run eagerly, the delivery is lent what was just stored (core.lending)
    activity_deliver(activity_id=stored.id, author_id=author.pk)  # as a worker runs the task: it reads
    assert reads == [{"author": author.pk}]
