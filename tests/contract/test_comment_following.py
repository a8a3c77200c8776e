"""`?order=following` in every strategy (the `storage` fixture): across pages by `next` cursor, the
followed people's visible comments first, then every other comment, each part in the topic's own
order, each comment exactly once, whatever the statuses, the follows and the page size."""

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from comments import services
from social.services import follow_create

pytestmark = pytest.mark.django_db

ACTIONS = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["visible", "visible", "removed", "author_only"]),
                             st.integers(-1, 20)), min_size=1, max_size=14)


@pytest.mark.parametrize("order", ["chronological", "threaded"])
def test_every_comment_comes_once_in_the_following_order_across_pages(api_client, make_topic, make_user, storage,
                                                                      order):
    if order == "threaded" and storage == "bucketed":
        pytest.skip("bucketed storage keeps posting order only (its topics are chronological)")
    writers = [make_user() for _ in range(4)]
    counter = iter(range(10**6))

    @hsettings(max_examples=12)
    @given(actions=ACTIONS, follows=st.sets(st.integers(0, 3)), page_size=st.integers(1, 4))
    def check(actions, follows, page_size):
        topic = make_topic(storage, order, title=f"Following {next(counter)}")
        reader = make_user()  # each example its own reader: follows of a failed one never linger
        for i in follows:
            follow_create(follower=reader, followee=writers[i])
        posted = []
        for n, (who, status, parent) in enumerate(actions):
            parent = posted[parent][0].id if 0 <= parent < len(posted) else None
            comment = services.comment_create(topic=topic, author=writers[who], text=f"t{n}", parent=parent)
            posted.append((comment, who, status))
        for comment, _, status in posted:
            if status != "visible":
                services.comment_status_store(topic=topic, comment_id=comment.id, status=status)
        stored = [c for c, _, _ in posted]
        if order == "threaded":
            stored.sort(key=lambda c: c.sort_key)
        status_of = {c.id: s for c, _, s in posted}
        by = {c.id: who for c, who, _ in posted}
        # The followed people's visible comments first, in the topic's order.
        first = [c for c in stored if by[c.id] in follows and status_of[c.id] == "visible"]
        # A removed comment every reply below which is removed too is left out (docs/api.md).
        lone = {c.id for c in stored if status_of[c.id] == "removed" and all(
            status_of[d.id] == "removed" for d in stored if d.path.startswith(c.path + "/"))}
        rest = [c for c in stored if c not in first and c.id not in lone]
        api_client.force_authenticate(reader)
        url = f"/api/topics/{topic.slug}/comments/?order=following&page_size={page_size}"
        ids = []
        while url:
            body = api_client.get(url).json()
            assert len(body["results"]) <= page_size
            ids += [c["id"] for c in body["results"]]
            url = body["next"]
        assert ids == [c.id for c in first] + [c.id for c in rest]

    check()
