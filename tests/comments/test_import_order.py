"""Old comments imported into a topic that already has comments take their place by their own
time under "Oldest first" (and newest first), in every storage layout: the discussion's numbers
are dealt out again in posting order, and every page, count and permalink position follows."""

import pytest

from comments import services
from tests.comments.support import LAYOUTS
from tests.imports.support import FIXTURES, run_import, stored

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("storage,order,bucket_size", [*((s, o, None) for s, o in LAYOUTS), ("bucketed", "chronological", 3)],
                         ids=[*(f"{s}-{o}" for s, o in LAYOUTS), "bucketed-in-buckets-of-3"])
def test_imported_old_comments_come_before_the_topics_newer_ones_oldest_first(api_client, make_topic, make_user,
                                                                              editor, settings, storage, order,
                                                                              bucket_size):
    if bucket_size:  # comments move between buckets, the page reads several
        settings.COMMENTS_BUCKET_SIZE = bucket_size
    editor.is_superuser = True
    editor.save()
    topic = make_topic(storage, order, title="Existing topic", slug="existing-topic")
    ours = [services.comment_create(topic=topic, author=make_user(name), text=f"posted here by {name}")
            for name in ("ana", "ben")]
    run_import("disqus", FIXTURES / "disqus.xml", "--storage", storage, "--order", order)
    comments = stored(topic)
    assert [c.seq for c in comments] == list(range(1, len(comments) + 1))
    assert [c.posted for c in comments] == sorted(c.posted for c in comments)  # 2015's first, ours last
    assert [c.id for c in comments[-2:]] == [c.id for c in ours]

    def texts(**params):
        body = api_client.get(f"/api/topics/{topic.slug}/comments/", params).json()
        return [c["text"] for c in body["results"]]

    oldest = texts(order="chronological", page_size=100)
    assert oldest[0].startswith("First!") and oldest[-2:] == ["posted here by ana", "posted here by ben"]
    assert texts(order="newest", page_size=2) == ["posted here by ben", "posted here by ana"]
    # Paged in twos, every comment once and in time order (the numbers have no gap and no double).
    paged, page = [], 1
    while True:
        body = api_client.get(f"/api/topics/{topic.slug}/comments/",
                              {"order": "chronological", "page_size": 2, "page": page}).json()
        paged += [c["id"] for c in body["results"]]
        if page >= body["num_pages"]:
            break
        page += 1
    visible = [c["id"] for c in api_client.get(f"/api/topics/{topic.slug}/comments/",
                                               {"order": "chronological", "page_size": 100}).json()["results"]]
    assert paged == visible
    again = run_import("disqus", FIXTURES / "disqus.xml", "--storage", storage)
    assert "0 imported" in again and [c.id for c in stored(topic)] == [c.id for c in comments]
