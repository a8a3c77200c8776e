"""Demo comments for `make run` (called by demo.loader.load_demo after people, topics
and the social graph).

Every topic whose discussion is empty gets comments and replies several levels deep
from the demo people, a few likes (through the like service: like edges, counters,
latest likers and credit flows). The moderation demo (`moderation.demo`, after this one)
pins and removes a comment on document topics, through the moderation pipeline.
The bucketed topic gets `BUCKETED_COMMENTS` comments, enough to fill several buckets.
Everything goes through the services, so followers' feeds receive the activities.
Deterministic (a seeded random generator); idempotent (non-empty discussions are kept).
"""

from __future__ import annotations

import random

from comments import services
from comments.managers import manager_for

COMMENTS_PER_TOPIC = 36
BUCKETED_COMMENTS = 520
LIKES_PER_TOPIC = 10

_OPENERS = ["I think", "Honestly,", "From what I have seen,", "Good point, and", "Not sure, but", "In my experience",
            "Agreed:", "Counterpoint:", "Fun fact:", "Quick question:"]
_BODIES = ["this works best with small buckets", "threads read better when replies are indented",
           "the embedded document is simple until it grows", "paging by skip is fine for the first pages",
           "a unique index makes likes idempotent", "pinned comments belong at the top of the hot order",
           "one document per comment scales with sharding", "full_slug sorts a thread in one index scan",
           "the latest twenty likers are enough for a byline", "monthly flows expire after a year"]


def _text(rng: random.Random, n: int) -> str:
    return f"{rng.choice(_OPENERS)} {rng.choice(_BODIES)} (#{n})."


def _discussion(topic, people, rng, total: int, out) -> list:
    threaded = topic.comment_order == "threaded"
    posted = []
    for n in range(1, total + 1):
        author = people[(n * 7 + rng.randrange(len(people))) % len(people)]
        # Threaded topics: most comments reply to a recent one, building deep threads;
        # chronological ones: a reply now and then.
        reply_chance = 0.65 if threaded else 0.2
        parent = None
        if posted and rng.random() < reply_chance:
            parent = rng.choice(posted[-6:]).id
        posted.append(services.comment_create(topic=topic, author=author, text=_text(rng, n), parent=parent))
        if n % 100 == 0:
            out(f"comments: {topic.slug}: {n} comments ...")
    return posted


def load(ctx, out=print) -> None:
    people = list(ctx.people)
    if not people:
        out("comments: no demo people, no comments")
        return
    rng = random.Random(4)
    for topic in ctx.topics:
        manager = manager_for(topic.comment_storage)
        if manager.count(discussion_id=topic.discussion_id):
            out(f"comments: {topic.slug}: already has comments")
            continue
        total = BUCKETED_COMMENTS if topic.comment_storage == "bucketed" else COMMENTS_PER_TOPIC
        posted = _discussion(topic, people, rng, total, out)
        likes = 0
        for comment in rng.sample(posted, min(LIKES_PER_TOPIC, len(posted))):
            for fan in rng.sample(people, rng.randint(1, min(5, len(people)))):
                if comment.author is not None and comment.author.id == fan.pk:
                    continue  # no one likes their own comment
                services.comment_like(topic=topic, comment_id=comment.id, user=fan)
                likes += 1
        deepest = max(c.depth for c in posted)
        out(f"comments: {topic.slug}: {len(posted)} comments ({topic.comment_storage}, {topic.comment_order}, "
            f"deepest reply at depth {deepest}), {likes} likes")
