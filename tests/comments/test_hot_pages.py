"""Hot order (pinned, then most liked, then newest) on the topic page of every storage and layout."""

import re

from comments import services


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
