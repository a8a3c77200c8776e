"""followers.page, follow and unfollow on the follow graph (tbc continuation lists).

A "celebrity" with `sizes.followers` followers: the list is written by the manager's
own bulk path, `FollowListManager.replace()` (a head plus continuation documents of
SOCIAL_IDS_PER_DOC ids, exactly what appends leave), with synthetic follower ids.
Only the followers shown on the measured pages get Django user rows (with those ids),
so each page's usernames query finds real users. The edge collection holds only the
edges this case creates: a follow's round trips do not depend on how many edges exist.

followers.page: the selector `followers_page()` (what the followers page and the API
call: the list documents, then one SQL query for the usernames), at page 1, 10, 100,
1000, 10000 (those that exist), the middle and the last page; `depth` is the page.

follow / unfollow: the services `follow_create()` / `follow_delete()` by new users
(edge, both lists, the follow activity), measured against the celebrity.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.test.utils import override_settings

from bench import people
from core.paging import PageRequest

SYNTHETIC_BASE = 50_000_000  # follower ids far above the bench's real users


def page_depths(num_pages: int) -> list[int]:
    depths = {1, max(1, (num_pages + 1) // 2), num_pages}
    depths.update(d for d in (10, 100, 1000, 10_000) if d < num_pages)
    return sorted(depths)


def make_users_with_ids(ids: list[int]) -> None:
    User = get_user_model()
    password = make_password("bench-only-password")
    User.objects.bulk_create([User(id=i, username=f"f{i}", password=password) for i in ids], batch_size=500,
                             ignore_conflicts=True)


def run(bench) -> None:
    from social.managers import FOLLOWERS, FollowListManager
    from social.selectors import followers_page
    from social.services import follow_create, follow_delete

    sizes = bench.sizes
    size = sizes.followers
    with bench.fresh_db(), override_settings(FEED_STRATEGY="write"):
        with bench.counter.paused():
            celebrity = people.users(1, "celebrity")[0]
            ids = list(range(SYNTHETIC_BASE, SYNTHETIC_BASE + size))  # oldest follow first
            FollowListManager().replace(kind=FOLLOWERS, lists={celebrity.pk: ids})
            bench.create_indexes()
            num_pages = max(1, -(-size // sizes.page_size))
            depths = page_depths(num_pages)
            newest_first = ids[::-1]
            shown = [i for d in depths for i in newest_first[(d - 1) * sizes.page_size: d * sizes.page_size]]
            make_users_with_ids(shown)
        for depth in depths:
            request = PageRequest(page=depth, page_size=sizes.page_size)
            m, page, varies = bench.measure(lambda r=request: followers_page(user=celebrity, request=r))
            assert page.count == size and len(page.items) == min(sizes.page_size, size - request.skip), (depth, page.count)
            bench.row("followers.page", "tbc", size, depth, m, varies=varies, page_size=sizes.page_size, num_pages=num_pages,
                      ids_per_doc=_ids_per_doc())
        with bench.counter.paused():
            fans = iter(people.users(sizes.post_repeats, "fan"))
            unfans = []
        def follow_next():
            fan = next(fans)
            unfans.append(fan)
            assert follow_create(follower=fan, followee=celebrity)

        m, _, varies = bench.measure(follow_next, repeats=sizes.post_repeats)
        bench.row("follow", "tbc", size, 0, m, varies=varies, followee_followers=size)
        leaving = iter(list(unfans))

        def unfollow_next():
            assert follow_delete(follower=next(leaving), followee=celebrity)

        m, _, varies = bench.measure(unfollow_next, repeats=sizes.post_repeats)
        bench.row("unfollow", "tbc", size, 0, m, varies=varies, followee_followers=size + sizes.post_repeats)


def _ids_per_doc() -> int:
    from social.managers.lists import ids_per_doc

    return ids_per_doc()
