"""Hot order (pinned, then most liked, then newest) on the topic page of every storage and layout."""

import re

import pytest

from comments import selectors, services
from core.paging import PageRequest


def test_the_topic_page_offers_hot_order_and_lists_by_likes(client, topic, alice, make_user, editor):
    a, b, c = (services.comment_create(topic=topic, author=alice, text=t) for t in ("first", "second", "third"))
    for fan in (make_user(), make_user()):
        services.comment_like(topic=topic, comment_id=b.id, user=fan)
    services.comment_pin_store(topic=topic, comment_id=a.id, pinned=True)
    html = client.get(f"/t/{topic.slug}/").content.decode()
    assert re.search(r'<a href="\?order=hot">Hot</a>', html), "the order selector offers Hot"
    html = client.get(f"/t/{topic.slug}/?order=hot").content.decode()
    assert '<span class="active" aria-current="true">Hot</span>' in html
    assert html.index("<p>first</p>") < html.index("<p>second</p>") < html.index("<p>third</p>")
    services.comment_pin_store(topic=topic, comment_id=a.id, pinned=False)
    html = client.get(f"/t/{topic.slug}/?order=hot").content.decode()
    assert html.index("<p>second</p>") < html.index("<p>third</p>") < html.index("<p>first</p>")


@pytest.mark.parametrize(("source", "order", "target"), [("document", "chronological", "embedded"),
                                                         ("document", "threaded", "embedded"),
                                                         ("document", "chronological", "bucketed"),
                                                         ("bucketed", "chronological", "embedded"),
                                                         ("embedded", "threaded", "document")])
def test_hot_order_is_right_after_a_discussion_moves_between_strategies(make_topic, make_user, source, order, target):
    """A move writes the target's comments and head without ranks: the first hot read ranks the
    moved discussion (comments/managers/ranks.py), and likes after the move keep it right."""
    from comments.migration import comment_storage_migrate
    from topics.models import Topic

    topic = make_topic(source, order)
    author = make_user()
    posted = [services.comment_create(topic=topic, author=author, text=f"c{i}") for i in range(6)]
    fans = [make_user() for _ in range(3)]
    for fan in fans:
        services.comment_like(topic=topic, comment_id=posted[2].id, user=fan)
    services.comment_like(topic=topic, comment_id=posted[4].id, user=fans[0])
    comment_storage_migrate(topic=topic, to=target, batch=4)
    topic = Topic.objects.get(pk=topic.pk)
    assert topic.comment_storage == target
    services.comment_like(topic=topic, comment_id=posted[0].id, user=fans[1])
    services.comment_like(topic=topic, comment_id=posted[0].id, user=fans[2])
    later = services.comment_create(topic=topic, author=author, text="after the move")

    def hot(size):
        page = selectors.comment_page(topic=topic, order="hot", request=PageRequest(page_size=size))
        ids = [c.id for c in page.items]
        while page.extra.get("next"):
            page = selectors.comment_page(topic=topic, order="hot", request=PageRequest(page_size=size),
                                          cursor=page.extra["next"])
            ids += [c.id for c in page.items]
        return ids

    expected = [posted[2].id, posted[0].id, posted[4].id, later.id] + [posted[i].id for i in (5, 3, 1)]
    assert hot(3) == expected
