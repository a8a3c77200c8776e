"""The comments demo: loads through the services, fills several buckets, idempotent."""

import pytest

from comments import demo, selectors
from comments.managers import manager_for
from core.paging import PageRequest
from demo import loader as demo_loader
from topics import demo as topics_demo

pytestmark = pytest.mark.django_db


def test_demo_loads_deep_threads_and_full_buckets_once(settings):
    lines = []
    ctx = demo_loader.load_people(lines.append)
    topics_demo.load(ctx, lines.append)
    demo.load(ctx, lines.append)
    counts = {t.slug: manager_for(t.comment_storage).count(discussion_id=t.discussion_id) for t in ctx.topics}
    by_storage = {t.slug: t for t in ctx.topics}
    for slug, count in counts.items():
        topic = by_storage[slug]
        if topic.comment_storage == "bucketed":
            assert count == demo.BUCKETED_COMMENTS and count > 4 * settings.COMMENTS_BUCKET_SIZE
        else:
            assert count == demo.COMMENTS_PER_TOPIC
        if topic.comment_order == "threaded":
            page = selectors.comment_page(topic=topic, request=PageRequest(page_size=100), viewer=None)
            assert max(c.depth for c in page.items) >= 3
        liked = selectors.comment_page(topic=topic, order="chronological", request=PageRequest(page_size=100), viewer=None)
        assert any(c.likes and c.latest_likers for c in liked.items)
    assert any("500 comments ..." in line for line in lines)
    lines.clear()
    demo.load(ctx, lines.append)
    assert {t.slug: manager_for(t.comment_storage).count(discussion_id=t.discussion_id) for t in ctx.topics} == counts
    assert sum("already has comments" in line for line in lines) == len(ctx.topics)
