"""The social demo: a celebrity whose followers need several tbc documents, feeds for everyone."""

import pytest

from core.paging import PageRequest
from social import demo, selectors, services
from social.managers import FOLLOWERS, FollowListManager

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("strategy", ["read", "write", "bucket"])
def test_demo_celebrity_pages_through_cleanly(settings, monkeypatch, make_user, editor, strategy):
    settings.SOCIAL_IDS_PER_DOC = 40
    settings.FEED_STRATEGY = strategy
    monkeypatch.setattr(demo, "FANS", 150)
    people = [make_user(name) for name in ("alice", "bob", "carol", "dave")]
    ctx = type("Ctx", (), {"editor": editor, "people": people, "topics": []})()
    lines = []
    demo.load(ctx, lines.append)
    celebrity = services.user_by_username("celebrity")
    docs = FollowListManager().documents(owner=celebrity.pk, kind=FOLLOWERS)
    assert len(docs) == 4 and all(len(d["ids"]) <= 40 for d in docs)  # 154 followers: head + 3 tbc
    seen = []
    page = selectors.followers_page(user=celebrity, request=PageRequest(page=1, page_size=25))
    for number in range(1, page.num_pages + 1):
        seen += [u.username for u in selectors.followers_page(user=celebrity,
                                                              request=PageRequest(page=number, page_size=25)).items]
    assert len(seen) == len(set(seen)) == 154
    # Everyone has something in their feed: fans see the celebrity's follows, people each other's.
    for user in [people[0], services.user_by_username("fan00150")]:
        assert selectors.feed_page(user=user, limit=5).items
    assert any("tbc" in line for line in lines)
    again = []
    demo.load(ctx, again.append)
    assert again[-1] == "social: follow graph already loaded"
    assert len(FollowListManager().documents(owner=celebrity.pk, kind=FOLLOWERS)) == 4
