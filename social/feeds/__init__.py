"""Activity feeds: one module per strategy, one interface (`base.FeedManager`).

- `read`   fan-out on read (`read.FanoutOnReadFeed`): a query over the author log;
- `write`  fan-out on write (`write.FanoutOnWriteFeed`): one copy per follower;
- `bucket` bucketed fan-out on write (`bucket.BucketedFanoutFeed`): buckets of 50.

`get_feed()` picks the strategy from `settings.FEED_STRATEGY` at call time. Switching
strategy does not migrate what the previous one delivered: feeds start filling from
the next activity (fan-out on read shows the whole log at once).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from social.feeds.base import FeedManager
from social.feeds.bucket import BucketedFanoutFeed
from social.feeds.read import FanoutOnReadFeed
from social.feeds.write import FanoutOnWriteFeed

STRATEGIES: dict[str, type[FeedManager]] = {
    FanoutOnReadFeed.name: FanoutOnReadFeed,
    FanoutOnWriteFeed.name: FanoutOnWriteFeed,
    BucketedFanoutFeed.name: BucketedFanoutFeed,
}


def get_feed(name: str | None = None) -> FeedManager:
    name = name or settings.FEED_STRATEGY
    try:
        return STRATEGIES[name]()
    except KeyError:
        raise ImproperlyConfigured(f"FEED_STRATEGY must be one of {', '.join(STRATEGIES)}, got {name!r}.") from None
