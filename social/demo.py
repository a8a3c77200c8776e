"""Demo social graph for `make run` (called by demo.loader.load_demo after people and topics).

- the demo people follow each other (each follows the next three, through the live
  follow service, so their followers' feeds get `follow` activities) and the editor;
- "celebrity" has `FANS` followers (demo users fan00001...), loaded through the bulk
  path (edges inserted in batches, lists built from the edges: several `tbc`
  continuation documents with the default 1,000 ids per document);
- activity in every feed: the editor's topics become `publish` activities for everyone,
  the celebrity follows people (one `follow` activity fanned out to every fan), and the
  comments demo that runs next reaches followers' feeds through the comment signal.

Idempotent: users are created only when missing; MongoDB content is loaded only when
the celebrity has no followers list (the embedded engine forgets it on restart).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password

from social import services
from social.managers import FOLLOWERS, FollowListManager

CELEBRITY = "celebrity"
FANS = 5000


def _users(out):
    User = get_user_model()
    password = make_password(settings.DEMO_PASSWORD)
    celebrity, _ = User.objects.get_or_create(username=CELEBRITY, defaults={"password": password})
    names = [f"fan{i:05d}" for i in range(1, FANS + 1)]
    existing = set(User.objects.filter(username__in=names).values_list("username", flat=True))
    missing = [User(username=name, password=password) for name in names if name not in existing]
    User.objects.bulk_create(missing, batch_size=500)
    fan_ids = list(User.objects.filter(username__in=names).values_list("id", flat=True))
    out(f"social: {CELEBRITY!r} and {len(fan_ids):,} fans ({len(missing):,} new), password {settings.DEMO_PASSWORD!r}")
    return celebrity, fan_ids


def load(ctx, out=print) -> None:
    celebrity, fan_ids = _users(out)
    if FollowListManager().sizes(owner=celebrity.pk)[FOLLOWERS]:
        out("social: follow graph already loaded")
        return
    people = list(ctx.people)
    pairs = [(fan, celebrity.pk) for fan in fan_ids] + [(p.pk, celebrity.pk) for p in people]
    pairs += [(fan, people[i % len(people)].pk) for i, fan in enumerate(fan_ids[:200])] if people else []
    out(f"social: loading {len(pairs):,} follow edges in batches ...")
    new = services.follow_bulk_load(pairs=pairs)
    docs = len(FollowListManager().documents(owner=celebrity.pk, kind=FOLLOWERS))
    out(f"social: {new:,} new edges; {CELEBRITY!r} has {len(fan_ids) + len(people):,} followers "
        f"in {docs} documents (head + {docs - 1} tbc continuations)")
    follows = 0
    for i, person in enumerate(people):
        for other in [people[(i + k) % len(people)] for k in (1, 2, 3)] + [ctx.editor]:
            if other.pk != person.pk:
                follows += services.follow_create(follower=person, followee=other)
    out(f"social: {follows} follows among the demo people (each a `follow` activity in their followers' feeds)")
    for topic in ctx.topics:
        services.activity_topic_published(topic=topic)
    out(f"social: {len(ctx.topics)} `publish` activities by {ctx.editor.username!r}")
    for person in people[:3]:
        services.follow_create(follower=celebrity, followee=person)
    out(f"social: {CELEBRITY!r} followed {min(3, len(people))} people: each activity fanned out to "
        f"{len(fan_ids) + len(people):,} feeds")
