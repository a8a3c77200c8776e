"""`ensure_indexes` / `manage.py mongo_indexes` on a store that already has indexes: identical
ones are left alone, a declared name whose keys or options changed is dropped and rebuilt,
an undeclared index on a declared key pattern is replaced, leftovers are reported and dropped
with --prune (never `_id_`). Runs on the embedded engine and on a real server (MONGODB_URI)."""

from io import StringIO

from django.core.management import call_command

from core.managers import declared_indexes, ensure_indexes, index_definition


def _indexes(collection) -> dict:
    return {info["name"]: info for info in collection.list_indexes()}


def _declared(collection: str, name: str) -> dict:
    return next(m.document for m in declared_indexes()[collection] if m.document["name"] == name)


def _actions(actions, kind):
    return {(a.collection, a.name) for a in actions if a.action == kind}


def test_a_second_run_changes_nothing(mongo_db):
    actions = ensure_indexes(mongo_db)
    assert {a.action for a in actions} == {"exists"}
    assert len(actions) == sum(len(models) for models in declared_indexes().values())


def test_changed_options_under_the_same_name_are_rebuilt(mongo_db):
    spec = _declared("notifications", "subject")
    assert "partialFilterExpression" in spec
    mongo_db.notifications.drop_index("subject")
    mongo_db.notifications.create_index([("subject", 1)], name="subject")  # the partial filter lost
    lines = []
    actions = ensure_indexes(mongo_db, out=lambda a: lines.append(a.line()))
    assert _actions(actions, "rebuilt") == {("notifications", "subject")}
    assert _actions(actions, "created") == set()
    assert index_definition(_indexes(mongo_db.notifications)["subject"]) == index_definition(spec)
    assert any(line.startswith("rebuilt") and "notifications.subject" in line and "partialFilterExpression" in line
               for line in lines)
    assert {a.action for a in ensure_indexes(mongo_db)} == {"exists"}


def test_changed_keys_and_uniqueness_under_the_same_name_are_rebuilt(mongo_db):
    unique = next((c, m.document) for c, ms in declared_indexes().items() for m in ms if m.document.get("unique")
                  and not m.document.get("sparse") and "partialFilterExpression" not in m.document)
    collection, spec = unique
    mongo_db[collection].drop_index(spec["name"])
    mongo_db[collection].create_index(list(spec["key"].items()), name=spec["name"])  # not unique
    mongo_db.notifications.drop_index("subject")
    mongo_db.notifications.create_index([("subject", -1)], name="subject", partialFilterExpression={
        "subject": {"$type": "string"}})  # another direction
    actions = ensure_indexes(mongo_db)
    assert _actions(actions, "rebuilt") == {(collection, spec["name"]), ("notifications", "subject")}
    assert _indexes(mongo_db[collection])[spec["name"]].get("unique") is True
    assert dict(_indexes(mongo_db.notifications)["subject"]["key"]) == {"subject": 1}


def test_an_undeclared_index_on_a_declared_key_pattern_is_replaced(mongo_db):
    spec = _declared("notifications", "subject")
    mongo_db.notifications.drop_index("subject")
    mongo_db.notifications.create_index([("subject", 1)], name="subject_old")
    actions = ensure_indexes(mongo_db)
    assert _actions(actions, "replaced") == {("notifications", "subject")}
    names = set(_indexes(mongo_db.notifications))
    assert "subject" in names and "subject_old" not in names
    assert index_definition(_indexes(mongo_db.notifications)["subject"]) == index_definition(spec)


def test_undeclared_indexes_are_kept_and_reported_then_dropped_with_prune(mongo_db):
    mongo_db.notifications.create_index([("leftover", 1)], name="leftover_1")
    mongo_db.retired_collection.insert_one({"x": 1})
    mongo_db.retired_collection.create_index([("x", 1)], name="x_1")
    actions = ensure_indexes(mongo_db)
    assert _actions(actions, "undeclared") == {("notifications", "leftover_1"), ("retired_collection", "x_1")}
    assert "leftover_1" in _indexes(mongo_db.notifications)
    pruned = ensure_indexes(mongo_db, prune=True)
    assert _actions(pruned, "dropped") == {("notifications", "leftover_1"), ("retired_collection", "x_1")}
    assert set(_indexes(mongo_db.notifications)) == {"_id_", *(m.document["name"] for m in declared_indexes()["notifications"])}
    assert set(_indexes(mongo_db.retired_collection)) == {"_id_"}  # never _id_
    assert {a.action for a in ensure_indexes(mongo_db, prune=True)} == {"exists"}


def test_the_command_prints_each_index_and_a_report(mongo_db):
    mongo_db.notifications.drop_index("subject")
    mongo_db.notifications.create_index([("subject", 1)], name="subject")
    mongo_db.notifications.create_index([("leftover", 1)], name="leftover_1")
    out = StringIO()
    call_command("mongo_indexes", "--prune", stdout=out)
    text = out.getvalue()
    assert "rebuilt    notifications.subject  was {subject: 1}, now {subject: 1} partialFilterExpression=" in text
    assert "dropped    notifications.leftover_1" in text
    total = sum(len(models) for models in declared_indexes().values())
    assert f"{total - 1} exists, 1 rebuilt, 1 dropped." in text.splitlines()[-1]
    out = StringIO()
    call_command("mongo_indexes", stdout=out)
    assert out.getvalue().splitlines()[-1].endswith(f": {total} exists.")


def test_indexes_imported_from_an_old_snapshot_are_recognised(tmp_path):
    # The restart crash: the old engine's snapshot restored each index with create_index(list of
    # pairs); the embedded engine imports such a snapshot once, and the indexes it creates are the
    # declared ones.
    import bson

    import docstore
    from core.mongo import import_snapshot

    indexes = {name: [{"key": [list(k) for k in model.document["key"].items()],
                       "options": {k: v for k, v in model.document.items() if k != "key"}} for model in models]
               for name, models in declared_indexes().items()}
    header = {"format": "commons-embedded-mongo", "version": 1, "database": "site", "saved": 0.0,
              "collections": {name: {"indexes": specs, "count": 1 if name == "notifications" else 0}
                              for name, specs in indexes.items()}}
    path = tmp_path / "snap.bson"
    path.write_bytes(bson.encode(header) + bson.encode({"c": "notifications", "d": {"subject": "s", "r": 1}}))
    client = docstore.Client(str(tmp_path / "store.sqlite3"), default_db="site")
    assert import_snapshot(client, str(path), "site") == 1
    actions = ensure_indexes(client["site"])
    assert {a.action for a in actions} == {"exists"}
    client.close()


def test_a_store_built_with_the_single_value_shard_keys_gets_the_splittable_ones(mongo_db):
    """The indexes of the older shard keys (one value per reader, author or discussion): today's
    are created beside them, the old ones reported undeclared and dropped only with --prune (after
    `mongo_shard` refined the key on a cluster), and a changed TTL lifetime is rebuilt."""
    for collection, name in (("social_feed_items", "owner_date_1"), ("social_activities", "author_date_1"),
                             ("comments", "discussion_hashed_seq"), ("notifications", "r_id")):
        mongo_db[collection].drop_index(name)
    mongo_db.social_feed_items.create_index([("owner", 1), ("date", -1), ("aid", -1)], name="owner_date")
    mongo_db.social_activities.create_index([("author", 1), ("date", -1), ("_id", -1)], name="author_date")
    mongo_db.comments.create_index([("discussion_id", "hashed")], name="discussion_hashed")
    mongo_db.social_feed_items.drop_index("date_ttl")
    mongo_db.social_feed_items.create_index([("date", 1)], name="date_ttl", expireAfterSeconds=86_400)
    actions = ensure_indexes(mongo_db)
    assert {("social_feed_items", "owner_date_1"), ("social_activities", "author_date_1"),
            ("comments", "discussion_hashed_seq"), ("notifications", "r_id")} <= _actions(actions, "created")
    assert _actions(actions, "rebuilt") == {("social_feed_items", "date_ttl")}
    assert _actions(actions, "undeclared") == {("social_feed_items", "owner_date"), ("social_activities", "author_date"),
                                              ("comments", "discussion_hashed")}
    assert _indexes(mongo_db.social_feed_items)["date_ttl"]["expireAfterSeconds"] == _declared(
        "social_feed_items", "date_ttl")["expireAfterSeconds"]
    pruned = ensure_indexes(mongo_db, prune=True)
    assert len(_actions(pruned, "dropped")) == 3
    assert {a.action for a in ensure_indexes(mongo_db)} == {"exists"}


def test_indexes_given_the_shard_key_are_rebuilt_on_a_site_that_has_them_without_it(mongo_db):
    """The hot index of bucketed ranks ends with `_id` (with `discussion_id` first, the whole shard
    key, for a shard's filter to read from the keys): a store made before has it under the same
    name without it, and `mongo_indexes` rebuilds it. The embedded ranks are sharded on the hashed
    discussion alone, and comments on the hashed discussion and `seq`, which their indexes hold
    already: their indexes, made with `_id` by a release before, are rebuilt without it."""
    older = {("comment_bucket_ranks", "discussion_hot"): [("discussion_id", 1), ("hot", -1), ("seq", -1)]}
    with_id = {("comments", "discussion_full_slug"): [("discussion_id", 1), ("full_slug", 1), ("seq", 1), ("_id", 1)],
               ("comments", "discussion_status_author_seq"): [("discussion_id", 1), ("status", 1), ("author.id", 1),
                                                              ("seq", 1), ("_id", 1)],
               ("comment_discussion_ranks", "discussion_sort_key"): [("discussion_id", 1), ("sort_key", 1), ("_id", 1)],
               ("comment_discussion_ranks", "discussion_hot"): [("discussion_id", 1), ("hot", -1), ("seq", -1),
                                                                ("_id", -1)]}
    for (collection, name), keys in {**older, **with_id}.items():
        mongo_db[collection].drop_index(name)
        mongo_db[collection].create_index(keys, name=name)
    out = StringIO()
    call_command("mongo_indexes", stdout=out)
    for collection, name in older:
        assert f"rebuilt    {collection}.{name}" in out.getvalue()
        key = list(_indexes(mongo_db[collection])[name]["key"])
        assert key[0] == "discussion_id" and key[-1] == "_id", (collection, name, key)
    for (collection, name), keys in with_id.items():
        assert f"rebuilt    {collection}.{name}" in out.getvalue()
        assert list(_indexes(mongo_db[collection])[name]["key"]) == [k for k, _ in keys[:-1]], (collection, name)
    assert {a.action for a in ensure_indexes(mongo_db)} == {"exists"}


def test_prune_keeps_the_index_of_the_shard_key_a_cluster_still_uses(mongo_db, monkeypatch):
    """On a cluster, a collection still sharded on an older release's key (the embedded ranks'
    `{discussion_id: hashed, _id: 1}` before they were sharded on the hashed discussion alone)
    keeps that key's index through --prune, reported "kept", until `mongo_shard` reshards it;
    a leftover that backs no shard key is dropped as before."""
    import core.managers as managers

    mongo_db.comment_discussion_ranks.create_index([("discussion_id", "hashed"), ("_id", 1)], name="discussion_hashed_id")
    mongo_db.comment_discussion_ranks.create_index([("leftover", 1)], name="leftover_1")

    class Config:
        def find_one(self, query, *args, **kwargs):
            if query["_id"] == f"{mongo_db.name}.comment_discussion_ranks":
                return {"_id": query["_id"], "key": {"discussion_id": "hashed", "_id": 1}}
            return None

    class Client:
        def __getitem__(self, name):
            return {"collections": Config()}

    with monkeypatch.context() as patched:  # a cluster for this call only (the store is the test's own)
        patched.setattr(managers.mongo, "is_embedded", lambda: False)
        patched.setattr(managers.mongo, "on_a_cluster", lambda: True)
        patched.setattr(managers.mongo, "get_client", lambda: Client())
        pruned = ensure_indexes(mongo_db, prune=True)
    assert _actions(pruned, "kept") == {("comment_discussion_ranks", "discussion_hashed_id")}
    assert ("comment_discussion_ranks", "leftover_1") in _actions(pruned, "dropped")
    assert "discussion_hashed_id" in _indexes(mongo_db.comment_discussion_ranks)
