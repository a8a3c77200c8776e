"""What a stored comment keeps, in every strategy: no second copy of its text and no field at its
default. A comment without Markdown has the html of its text as one paragraph, stored as
`html: true` (the pages and the API still print `<p>...</p>`); a comment with Markdown keeps its
rendered html; `edited`, `latest_likers` and `pinned`/`likes` are left out until they hold
something, an array element's `status` while it is visible, and every comment's `reply_to` (the
parent's author's name is read from the parent where a page shows it). Bucketed ranks carry no
threaded key and no path (nothing pages them in threaded order; a hot page finds a comment's
bucket from its number)."""

import pytest

from core.mongo import get_db

pytestmark = pytest.mark.django_db

LAYOUTS = [("document", "threaded"), ("bucketed", "chronological"), ("embedded", "threaded"),
           ("embedded", "chronological")]


COMMENT_STORES = ("comments", "comment_buckets", "comment_discussions")


def url(topic, *parts):
    return "/".join([f"/api/topics/{topic.slug}/comments", *parts]) + "/"


def raw_comment(text: str) -> dict:
    """The stored document or array element holding `text`, as the database has it."""
    def walk(value):
        if isinstance(value, dict):
            if value.get("text") == text:
                yield value
            for item in value.values():
                yield from walk(item)
        elif isinstance(value, list):
            for item in value:
                yield from walk(item)

    db = get_db()
    # The comment itself, in its strategy's collection: not a pending copy or a search entry.
    found = [hit for name in COMMENT_STORES for doc in db[name].find() for hit in walk(doc)]
    assert found, text
    return found[0]


@pytest.mark.parametrize("storage,order", LAYOUTS)
def test_a_comment_keeps_no_copy_of_its_text_and_no_default(storage, order, make_topic, make_user, api_client):
    topic = make_topic(storage, order)
    api_client.force_authenticate(make_user("ann"))
    plain = "A plain comment & nothing < more"
    first = api_client.post(url(topic), {"text": plain}, format="json")
    assert first.status_code == 201, first.content
    marked = api_client.post(url(topic), {"text": "with *emphasis*", "parent": first.json()["id"]}, format="json")
    assert marked.status_code == 201, marked.content

    stored = raw_comment(plain)
    assert stored["html"] is True
    assert not {"edited", "latest_likers", "reply_to"} & set(stored)
    assert raw_comment("with *emphasis*")["html"] == "<p>with <em>emphasis</em></p>"

    page = {c["text"]: c for c in api_client.get(url(topic)).json()["results"]}
    assert page[plain]["html"] == "<p>A plain comment &amp; nothing &lt; more</p>"
    assert page["with *emphasis*"]["html"] == "<p>with <em>emphasis</em></p>"
    assert page[plain]["edited"] is None
    html_page = api_client.get(f"/t/{topic.slug}/").content.decode()
    assert "A plain comment &amp; nothing &lt; more" in html_page

    edited = api_client.patch(url(topic, first.json()["id"]), {"text": "Still plain"}, format="json")
    assert edited.status_code == 200 and edited.json()["html"] == "<p>Still plain</p>"
    again = raw_comment("Still plain")
    assert again["html"] is True and again["edited"] is not None
    api_client.force_authenticate(make_user("bo"))
    liked = api_client.post(url(topic, first.json()["id"], "like"), format="json")
    assert liked.status_code in (200, 201), liked.content
    assert raw_comment("Still plain")["latest_likers"] == ["bo"]


def test_bucketed_ranks_carry_no_threaded_key(make_topic, make_user, api_client):
    topic = make_topic("bucketed", "chronological")
    api_client.force_authenticate(make_user("ann"))
    assert api_client.post(url(topic), {"text": "ranked"}, format="json").status_code == 201
    assert api_client.get(url(topic) + "?order=hot").status_code == 200
    ranks = list(get_db()["comment_bucket_ranks"].find())
    assert len(ranks) == 1 and {"hot", "seq"} <= set(ranks[0]) and not {"sort_key", "posted", "path"} & set(ranks[0])


def test_embedded_ranks_carry_their_path_in_their_threaded_key(make_topic, make_user, api_client):
    topic = make_topic("embedded", "threaded")
    api_client.force_authenticate(make_user("ann"))
    root = api_client.post(url(topic), {"text": "root"}, format="json").json()
    reply = api_client.post(url(topic), {"text": "reply", "parent": root["id"]}, format="json").json()
    ranks = {r["_id"].split(":")[1]: r for r in get_db()["comment_discussion_ranks"].find()}
    assert set(ranks) == {root["id"], reply["id"]} and not any("path" in r for r in ranks.values())
    assert ranks[reply["id"]]["sort_key"].startswith(ranks[root["id"]]["sort_key"] + "/")
    for order in ("threaded", "hot", "chronological"):
        page = api_client.get(url(topic) + f"?order={order}").json()["results"]
        assert sorted(c["text"] for c in page) == ["reply", "root"], order
    assert api_client.get(url(topic, reply["id"])).json()["text"] == "reply"
    assert [c["text"] for c in api_client.get(url(topic, root["id"], "thread")).json()["results"]] == ["root", "reply"]


THREADED_LAYOUTS = [("document", "threaded"), ("embedded", "threaded")]


@pytest.mark.parametrize("storage,order", THREADED_LAYOUTS)
def test_a_threaded_key_level_is_a_short_stamp_and_the_id(storage, order, make_topic, make_user, api_client):
    """Each level of a threaded key is the posting millisecond in 7 characters, ':' and the id:
    the key is stored in the comment, its rank and its indexes, once per level."""
    topic = make_topic(storage, order)
    api_client.force_authenticate(make_user("ann"))
    root = api_client.post(url(topic), {"text": "root"}, format="json").json()["id"]
    reply = api_client.post(url(topic), {"text": "reply", "parent": root}, format="json").json()["id"]
    stored = raw_comment("reply")
    key = stored.get("full_slug", stored.get("sort_key"))
    levels = key.split("/")
    assert [level.split(":")[1] for level in levels] == [root, reply]
    assert all(len(level.split(":")[0]) == 7 for level in levels)


def legacy_key(key: str, posted) -> str:
    """`key` in the form stored before (17 decimal digits a level), as a site's older data holds it."""
    from datetime import UTC

    stamp = posted.astimezone(UTC).strftime("%Y%m%d%H%M%S") + f"{posted.microsecond // 1000:03d}"
    return "/".join(f"{stamp}:{level.split(':')[1]}" for level in key.split("/"))


@pytest.mark.parametrize("storage,order", THREADED_LAYOUTS)
def test_keys_stored_in_the_former_form_keep_their_order_beside_new_ones(storage, order, make_topic, make_user,
                                                                         api_client):
    """A discussion whose comments carry 17-digit keys (stored before) takes new comments and
    replies in threaded order, pages and cursors included: a new key sorts after every older one."""
    from comments.managers import manager_for

    topic = make_topic(storage, order)
    api_client.force_authenticate(make_user("ann"))
    old = [api_client.post(url(topic), {"text": f"old {i}"}, format="json").json()["id"] for i in range(3)]
    db = get_db()
    manager = manager_for(storage)
    for cid in old:  # what an older site stored: every level of the key in the former form
        comment = manager.get(discussion_id=topic.discussion_id, comment_id=cid, threaded=True)
        if storage == "document":
            db["comments"].update_one({"_id": f"{topic.discussion_id}:{cid}"},
                                      {"$set": {"full_slug": legacy_key(comment.sort_key, comment.posted)}})
        else:
            db["comment_discussion_ranks"].update_one(
                {"_id": f"{topic.discussion_id}:{cid}"},
                {"$set": {"sort_key": legacy_key(comment.sort_key, comment.posted)}})
            doc = db["comment_discussions"].find_one({"_id": topic.discussion_id})
            for i, element in enumerate(doc["replies"]):
                if element["id"] == cid:
                    db["comment_discussions"].update_one(
                        {"_id": topic.discussion_id},
                        {"$set": {f"replies.{i}.sort_key": legacy_key(element["sort_key"], comment.posted),
                                  f"replies.{i}.posted": comment.posted}})
    reply = api_client.post(url(topic), {"text": "new reply", "parent": old[0]}, format="json").json()["id"]
    new = api_client.post(url(topic), {"text": "new"}, format="json").json()["id"]
    expected = [old[0], reply, old[1], old[2], new]
    assert [c["id"] for c in api_client.get(url(topic) + "?page_size=10").json()["results"]] == expected
    seen, page = [], api_client.get(url(topic) + "?page_size=2").json()
    while True:
        seen += [c["id"] for c in page["results"]]
        if not page.get("next"):
            break
        page = api_client.get(page["next"]).json()
    assert seen == expected


# What each layout leaves out of a stored comment because its sort key (or `_id`) names it.
DERIVED = {"document": {"cid", "slug", "parent_id", "depth", "parent", "path", "posted"},
           "bucketed": {"path", "parent", "depth", "posted"}, "embedded": {"path", "parent", "depth", "posted"}}


@pytest.mark.parametrize("storage,order", LAYOUTS)
def test_a_comment_keeps_no_field_its_sort_key_names(storage, order, make_topic, make_user, api_client):
    """The parent, the depth, the posting time (its last level's stamp) and, where no query looks
    at it, the path of ids and the id follow from the sort key and `_id`: not stored, and still
    in every page and the API."""
    topic = make_topic(storage, order)
    api_client.force_authenticate(make_user("ann"))
    root = api_client.post(url(topic), {"text": "root"}, format="json").json()["id"]
    reply = api_client.post(url(topic), {"text": "reply", "parent": root}, format="json").json()["id"]
    deeper = api_client.post(url(topic), {"text": "deeper", "parent": reply}, format="json").json()["id"]
    for text in ("root", "reply", "deeper"):
        assert not DERIVED[storage] & set(raw_comment(text)), (text, raw_comment(text))
    shown = {c["id"]: c for c in api_client.get(url(topic) + "?page_size=10").json()["results"]}
    assert (shown[root]["parent"], shown[reply]["parent"], shown[deeper]["parent"]) == (None, root, reply)
    assert (shown[root]["depth"], shown[reply]["depth"], shown[deeper]["depth"]) == (0, 1, 2)
    assert api_client.get(url(topic, deeper)).json()["parent"] == reply
    posted = {cid: c["posted"] for cid, c in shown.items()}
    assert posted[root] < posted[reply] < posted[deeper]
    assert api_client.get(url(topic, deeper)).json()["posted"] == posted[deeper]


def test_a_comment_document_stored_with_the_seed_fields_reads_as_before(make_topic, make_user, api_client):
    """A document-strategy comment stored with `cid`, `slug`, `parent_id` and `depth` (an older
    site's data) pages and reads as one stored without them."""
    topic = make_topic("document", "threaded")
    api_client.force_authenticate(make_user("ann"))
    root = api_client.post(url(topic), {"text": "root"}, format="json").json()["id"]
    reply = api_client.post(url(topic), {"text": "reply", "parent": root}, format="json").json()["id"]
    before = api_client.get(url(topic)).json()["results"]
    stored = get_db()["comments"].find_one({"_id": f"{topic.discussion_id}:{reply}"})
    from comments.managers.fields import key_posted

    get_db()["comments"].update_one({"_id": f"{topic.discussion_id}:{reply}"}, {"$set": {
        "cid": reply, "slug": f"{root}/{reply}", "parent_id": root, "depth": 1,
        "posted": key_posted(stored["full_slug"])}})
    assert api_client.get(url(topic)).json()["results"] == before
    assert api_client.get(url(topic, reply)).json()["parent"] == root


@pytest.mark.parametrize("storage,order", LAYOUTS)
def test_pinned_and_likes_are_left_out_at_their_default_and_every_change_still_lands(storage, order, make_topic,
                                                                                     make_user, api_client):
    """A comment never pinned nor liked stores neither `pinned` nor `likes`; an unpin of it changes
    nothing (no hint, no hot score moves), a pin and a like create them, and the likes repair
    matches a count of 0 stored as no field."""
    from comments import services
    from comments.managers.likes import CommentLikeManager

    topic = make_topic(storage, order)
    ann = make_user("ann")
    api_client.force_authenticate(ann)
    first = api_client.post(url(topic), {"text": "first"}, format="json").json()["id"]
    second = api_client.post(url(topic), {"text": "second", "parent": first}, format="json").json()["id"]
    assert not {"pinned", "likes"} & set(raw_comment("first")) and not {"pinned", "likes"} & set(raw_comment("second"))

    manager, threaded = services.comment_manager(topic), services.is_threaded(topic)
    # An unpin of an unpinned comment (as a concurrent unpin's write finds it) changes nothing.
    manager.set_pinned(discussion_id=topic.discussion_id, comment_id=first, pinned=False, threaded=threaded)
    assert "pinned" not in raw_comment("first")
    hot = [c["id"] for c in api_client.get(url(topic) + "?order=hot").json()["results"]]
    assert hot == [second, first]  # newest first: nothing moved up or down
    assert api_client.get(url(topic)).json().get("pinned", []) == []

    services.comment_pin_store(topic=topic, comment_id=first, pinned=True)
    assert raw_comment("first")["pinned"] is True
    assert [c["id"] for c in api_client.get(url(topic) + "?order=hot").json()["results"]][0] == first
    services.comment_pin_store(topic=topic, comment_id=first, pinned=False)
    assert [c["id"] for c in api_client.get(url(topic) + "?order=hot").json()["results"]] == [second, first]

    # An edge written without its counter (a crash between the two writes): the repair matches
    # the count 0 that the comment stores as no field, and sets it.
    bob = make_user("bob")
    CommentLikeManager().like(discussion_id=topic.discussion_id, comment_id=second, user_id=bob.pk,
                              at=manager.get(discussion_id=topic.discussion_id, comment_id=second,
                                             threaded=threaded).posted)
    services.comment_likes_repair(topics=[topic], grace=0)
    assert raw_comment("second")["likes"] == 1
    assert api_client.get(url(topic, second)).json()["likes"] == 1
    assert [c["id"] for c in api_client.get(url(topic) + "?order=hot").json()["results"]] == [second, first]


HOT_STORES = {"document": "comments", "bucketed": "comment_bucket_ranks", "embedded": "comment_discussion_ranks"}


@pytest.mark.parametrize("storage,order", [("document", "threaded"), ("bucketed", "chronological"),
                                           ("embedded", "threaded")])
def test_a_hot_score_is_an_int32_until_a_pin_needs_64_bits(storage, order, make_topic, make_user, api_client):
    """`hot` is stored as BSON stores a plain int: int32 while it fits (a like count), int64 for a
    pinned comment's score; hot order reads both kinds by value."""
    from bson.int64 import Int64

    from comments import services

    topic = make_topic(storage, order)
    api_client.force_authenticate(make_user("ann"))
    first = api_client.post(url(topic), {"text": "first"}, format="json").json()["id"]
    second = api_client.post(url(topic), {"text": "second"}, format="json").json()["id"]
    api_client.force_authenticate(make_user("bob"))  # a like of another's comment
    assert api_client.post(url(topic, first, "like")).status_code in (200, 201), "like refused"

    def stored_hot(comment_id):
        docs = [d for d in get_db()[HOT_STORES[storage]].find({"discussion_id": topic.discussion_id})
                if str(d["_id"]).endswith(f":{comment_id}")]
        assert len(docs) == 1
        return docs[0]["hot"]

    # bson decodes an int32 as int and an int64 as Int64 (a subclass of int).
    assert type(stored_hot(second)) is int and stored_hot(second) == 0
    assert type(stored_hot(first)) is int and stored_hot(first) == 1
    assert [c["id"] for c in api_client.get(url(topic) + "?order=hot").json()["results"]] == [first, second]
    services.comment_pin_store(topic=topic, comment_id=second, pinned=True)
    assert type(stored_hot(second)) is Int64
    assert [c["id"] for c in api_client.get(url(topic) + "?order=hot").json()["results"]] == [second, first]


def test_a_nested_embedded_comment_keeps_no_replies_array_until_its_first_reply(make_topic, make_user, api_client):
    """A leaf of a threaded embedded discussion stores no empty `replies`: its first reply's `$push`
    makes the array. The thread, a reply to a reply and the size bound's accounting read as before."""
    from comments import services
    from comments.managers.layout import charge, iter_elements

    topic = make_topic("embedded", "threaded")
    api_client.force_authenticate(make_user("ann"))
    root = api_client.post(url(topic), {"text": "root"}, format="json").json()["id"]
    assert "replies" not in raw_comment("root")
    reply = api_client.post(url(topic), {"text": "reply", "parent": root}, format="json").json()["id"]
    deeper = api_client.post(url(topic), {"text": "deeper", "parent": reply}, format="json").json()["id"]
    assert [e["id"] for e in raw_comment("root")["replies"]] == [reply]
    assert [e["id"] for e in raw_comment("reply")["replies"]] == [deeper] and "replies" not in raw_comment("deeper")
    assert [c["id"] for c in api_client.get(url(topic)).json()["results"]] == [root, reply, deeper]
    assert api_client.get(url(topic, deeper)).json()["parent"] == reply
    doc = get_db()["comment_discussions"].find_one({"_id": topic.discussion_id})
    # Each element charged as if it had its `replies` from the start: the counter is what it was.
    assert doc["bytes"] == sum(charge({k: v for k, v in e.items() if k != "replies"}, nested=True)
                               for e in iter_elements(doc))
    assert services.comment_manager(topic).count(discussion_id=topic.discussion_id) == 3


@pytest.mark.parametrize("storage,order", LAYOUTS)
def test_an_array_element_leaves_its_status_out_while_visible_and_moderation_still_lands(storage, order, make_topic,
                                                                                         make_user, api_client):
    """An embedded or bucketed element stores no `status` while it is visible (the document
    strategy keeps it: its following order's indexes match it); a removal, a restore and a
    deletion (whose guard matches the visible status stored as no field) land, and the pages
    and the following order read the missing field as visible."""
    from comments import services

    topic = make_topic(storage, order)
    ann = make_user("ann")
    api_client.force_authenticate(ann)
    first = api_client.post(url(topic), {"text": "first"}, format="json").json()["id"]
    second = api_client.post(url(topic), {"text": "second", "parent": first}, format="json").json()["id"]
    for text in ("first", "second"):
        stored = raw_comment(text)
        assert stored.get("status") == "visible" if storage == "document" else "status" not in stored, stored

    services.comment_status_store(topic=topic, comment_id=first, status="removed")
    assert raw_comment("first")["status"] == "removed"
    assert api_client.get(url(topic, first)).json()["status"] == "removed"
    services.comment_status_store(topic=topic, comment_id=first, status="visible")
    assert api_client.get(url(topic, first)).json()["status"] == "visible"

    gone = api_client.delete(url(topic, second))
    assert gone.status_code in (200, 204), gone.content
    assert api_client.get(url(topic, second)).json()["status"] == "deleted"

    page = api_client.get(url(topic)).json()["results"]
    assert [(c["id"], c["status"]) for c in page] == [(first, "visible"), (second, "deleted")]


@pytest.mark.parametrize("storage,order", LAYOUTS)
def test_a_reply_keeps_no_copy_of_its_parents_author_and_pages_still_name_them(storage, order, make_topic, make_user,
                                                                              api_client, client):
    """A reply stores no `reply_to`: "in reply to @name" is read from the parent, on the page or
    (one read) off it, in every order that names it; a removed parent's author stays unnamed."""
    from comments import services

    topic = make_topic(storage, order)
    ann, bob = make_user("ann"), make_user("bob")
    api_client.force_authenticate(ann)
    root = api_client.post(url(topic), {"text": "the root"}, format="json").json()["id"]
    api_client.force_authenticate(bob)
    reply = api_client.post(url(topic), {"text": "the reply", "parent": root}, format="json").json()["id"]
    assert "reply_to" not in raw_comment("the reply")

    link = f'in reply to <a href="/t/{topic.slug}/c/{root}/">@ann</a>'
    for query in ("?order=chronological", "?order=chronological&page_size=1&page=2", "?order=newest", "?order=hot"):
        assert link in client.get(f"/t/{topic.slug}/{query}").content.decode(), query
    services.comment_status_store(topic=topic, comment_id=root, status="removed")
    html = client.get(f"/t/{topic.slug}/?order=chronological&page_size=1&page=2").content.decode()
    assert f'/c/{reply}/' in html and "@ann" not in html


def test_an_embedded_page_names_off_page_parents_without_reading_the_discussion_whole(make_topic, make_user,
                                                                                    api_client, client, monkeypatch):
    """In an embedded discussion the off-page parents are read by their ranks, element by element
    (about page_size of them), not by walking every comment of the discussion document."""
    from comments.managers import embedded

    topic = make_topic("embedded", "chronological")
    ann, bob = make_user("ann"), make_user("bob")
    api_client.force_authenticate(ann)
    root = api_client.post(url(topic), {"text": "the root"}, format="json").json()["id"]
    for n in range(5):
        api_client.post(url(topic), {"text": f"another root {n}"}, format="json")
    api_client.force_authenticate(bob)
    api_client.post(url(topic), {"text": "the reply", "parent": root}, format="json")

    def walked(*args, **kwargs):
        raise AssertionError("the discussion document was walked whole")

    monkeypatch.setattr(embedded, "iter_elements", walked)
    html = client.get(f"/t/{topic.slug}/?order=chronological&page_size=1&page=7").content.decode()
    assert f'in reply to <a href="/t/{topic.slug}/c/{root}/">@ann</a>' in html
