"""The embedded engine's snapshot: complete round trip (documents, BSON types, indexes),
atomic replacement, debounced saving, and a real restart keeping a comment's permalink."""

import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bson import ObjectId
from pymongo.errors import DuplicateKeyError

from cms_site.mongo import get_client
from cms_site.mongo_snapshot import Snapshotter

ROOT = Path(__file__).resolve().parents[2]


def _engine():
    """A fresh embedded client of the same engine class as get_client()'s (no second import)."""
    return type(get_client())(tz_aware=True)


def test_round_trip_keeps_documents_types_and_unique_indexes(tmp_path):
    source = _engine()
    when = dt.datetime(2026, 11, 22, 12, 30, 1, 123000, tzinfo=dt.UTC)
    oid = ObjectId()
    source["snap"]["things"].create_index([("k", 1), ("n", -1)], unique=True, name="k_n")
    source["snap"]["things"].insert_many([{"_id": oid, "k": "a", "n": 1, "at": when, "nested": {"l": [1, "x"]}},
                                         {"_id": "s:1", "k": "b", "n": 2}])
    source["snap"]["empty"].create_index("x", name="x_1")
    path = tmp_path / "snap.bson"
    Snapshotter(source, path, db_name="snap").save()

    target = _engine()
    assert Snapshotter(target, path, db_name="snap").load() == 2
    docs = {d["_id"]: d for d in target["snap"]["things"].find()}
    assert docs[oid]["at"] == when and docs[oid]["nested"] == {"l": [1, "x"]} and docs["s:1"]["n"] == 2
    with pytest.raises(DuplicateKeyError):
        target["snap"]["things"].insert_one({"k": "a", "n": 1})
    assert "x_1" in target["snap"]["empty"].index_information()
    assert Snapshotter(target, path, db_name="snap").load() == 0  # never loads over existing data


def test_a_failed_save_leaves_the_previous_snapshot_whole(tmp_path, monkeypatch):
    engine = _engine()
    engine["snap"]["c"].insert_one({"_id": 1, "v": "first"})
    path = tmp_path / "snap.bson"
    snapshotter = Snapshotter(engine, path, db_name="snap")
    snapshotter.save()
    before = path.read_bytes()
    engine["snap"]["c"].insert_one({"_id": 2, "v": "second"})

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        snapshotter.save()
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["snap.bson"]  # no temp file left
    monkeypatch.undo()
    snapshotter.save()
    assert Snapshotter(_engine(), path, db_name="snap").load() == 2


def test_saves_are_debounced_and_a_flush_saves_what_is_pending(tmp_path):
    engine = _engine()
    snapshotter = Snapshotter(engine, tmp_path / "snap.bson", db_name="snap", debounce=0.2)
    for i in range(20):
        engine["snap"]["c"].insert_one({"_id": i})
        snapshotter.mark_dirty()
    deadline = time.monotonic() + 10
    while snapshotter.saves == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert snapshotter.saves == 1  # twenty writes in a burst: one save
    snapshotter.flush()
    assert snapshotter.saves == 1  # nothing pending
    engine["snap"]["c"].insert_one({"_id": 99})
    snapshotter.mark_dirty()
    snapshotter.stop()  # what exit does: the pending write is saved now
    assert snapshotter.saves == 2 and Snapshotter(_engine(), tmp_path / "snap.bson", db_name="snap").load() == 21


WRITE = """
from django.contrib.auth import get_user_model
from cms_site import mongo_snapshot
from comments import services
from social.services import follow_create
from topics.services import topic_create
editor = get_user_model().objects.create_user("ed", password="pw", is_staff=True)
alice = get_user_model().objects.create_user("al", password="pw")
topic = topic_create(author=editor, title="Kept", comment_storage="{storage}")
c = services.comment_create(topic=topic, author=alice, text="written before the restart")
services.comment_like(topic=topic, comment_id=c.id, user=editor)
follow_create(follower=alice, followee=editor)
mongo_snapshot.mark_dirty()  # what the middleware does after a write request
print(c.id)
"""
READ = """
from comments import selectors
from topics.models import Topic
topic = Topic.objects.get(slug="kept")
from django.contrib.auth import get_user_model
from social.selectors import profile_get
c = selectors.comment_get(topic=topic, comment_id="{cid}")
User = get_user_model()
editor, alice = User.objects.get(username="ed"), User.objects.get(username="al")
profile = profile_get(user=editor, viewer=alice)
print(c.text, c.likes, profile.followers_count, profile.is_following, sep="|")
"""


@pytest.mark.parametrize("storage", ["embedded"])
def test_a_restart_keeps_what_users_wrote(tmp_path, storage):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "cms_site.settings", "DEBUG": "1", "MONGODB_URI": "",
           "MONGODB_SNAPSHOT": str(tmp_path / "var" / "snap.bson"), "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    env.pop("SECRET_KEY", None)

    def manage(*args):
        r = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""

    manage("migrate", "--noinput", "-v", "0")
    cid = manage("shell", "-c", WRITE.format(storage=storage))
    assert (tmp_path / "var" / "snap.bson").exists()
    # the comment, its like and the follow: all in the embedded engine, all back after the restart
    assert manage("shell", "-c", READ.format(cid=cid)) == "written before the restart|1|1|True"
