"""Fan-out on read (seed 001, "读时整合"): each activity is stored once, in the author
log; a feed is a query over the activities of the people I follow.

Write: 1 round trip (the log insert, done before `post`), whatever the follower count.
Read: 1 query for my following ids (ceil(following / SOCIAL_IDS_PER_DOC) documents in one
cursor) + 1 query `{author: {$in: following}}` sorted by (date, _id) desc on the
(author, date, _id) index. On a cluster sharded by author that query goes to every
shard holding one of my authors (scatter-gather), which is why reads are the slow side.
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
