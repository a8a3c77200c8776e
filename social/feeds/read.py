"""Fan-out on read (seeds/001_94fc363f03dca98a.txt, "读时整合"): each activity is stored once, in the author
log; a feed is a query over the activities of the people I follow.

Write: 1 round trip (the log insert, done before `post`), whatever the follower count.
Read: my mutes, my following ids (ceil(following / SOCIAL_IDS_PER_DOC) documents in one
cursor), then `ActivityLogManager.by_authors`: for up to 100 followed authors one merge
`{author: {$in: following}}` sorted by (date, _id) desc on the (author, date, _id) index;
for more, first one covered DISTINCT_SCAN for each author's newest (date, _id), then that merge over the
authors that can hold the page. 3 or 4 round trips and about `limit` documents at any depth,
but one index key per followed author: a page must look at the newest activity of every
author I follow. That is the strategy's floor, and the cost the push strategies avoid. On a
cluster sharded by author these queries go to every shard holding one of my authors
(scatter-gather), which is why reads are the slow side.
"""

from __future__ import annotations

from social.feeds.base import FeedManager, FeedPage
from social.feeds.log import ActivityLogManager


class FanoutOnReadFeed(FeedManager):
    name = "read"

    def post(self, activity, *, followers):
        return 0  # already stored once, in the author log

    def page(self, *, owner, following, cursor, limit) -> FeedPage:
        log = ActivityLogManager(self.db, read_db=self.read_db)
        return log.by_authors(authors=sorted(set(following())), cursor=cursor, limit=limit)
