"""Follow/unfollow storms by one user: however the follows and unfollows interleave, once they
are over the followers and following lists, their counts and `is_following` agree with the edges."""

import random
import sys
import threading

import pytest

from social import services
from social.managers import FOLLOWERS, FOLLOWING, FollowEdgeManager, FollowListManager

pytestmark = pytest.mark.django_db(transaction=True)

THREADS, OPERATIONS, TRIALS = 12, 12, 6


def _listed(lists, owner, kind):
    docs = lists.documents(owner=owner, kind=kind)
    ids = [i for d in docs for i in d["ids"]]
    count = docs[0]["count"] if docs else 0
    return ids, count


def test_a_follow_unfollow_storm_leaves_lists_edges_and_counts_in_agreement(make_user, monkeypatch):
    monkeypatch.setattr(services, "activity_record", lambda *, activity: activity)
    monkeypatch.setattr(services.user_followed, "send_robust", lambda **kwargs: [])
    edges, lists = FollowEdgeManager(), FollowListManager()
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for trial in range(TRIALS):
            fan = make_user(f"fan{trial}")
            stars = [make_user(f"star{trial}-{n}") for n in range(2)]
            rng = random.Random(trial)
            plans = [[(rng.choice(stars), rng.random() < 0.5) for _ in range(OPERATIONS)] for _ in range(THREADS)]

            def storm(plan, fan=fan):
                for star, follow in plan:
                    (services.follow_create if follow else services.follow_delete)(follower=fan, followee=star)

            threads = [threading.Thread(target=storm, args=(plan,)) for plan in plans]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            following, following_count = _listed(lists, fan.pk, FOLLOWING)
            followed = {s.pk for s in stars if edges.exists(follower=fan.pk, followee=s.pk)}
            assert sorted(following) == sorted(followed) and following_count == len(followed), (trial, following, followed)
            for star in stars:
                followers, count = _listed(lists, star.pk, FOLLOWERS)
                assert followers == ([fan.pk] if star.pk in followed else []) and count == len(followers), (trial, star.pk)
                assert services.FollowListManager().sizes(owner=star.pk)[FOLLOWERS] == len(followers)
    finally:
        sys.setswitchinterval(before)
