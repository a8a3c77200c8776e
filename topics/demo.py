"""Demo topics for `make run` (called by demo.loader.load_demo after the people).

Got-or-created by slug, so a restart keeps the rows and their ids (the MongoDB
discussion ids). `ctx.topics` gets the live topics only: the social and comments
steps announce and fill those. The draft and the scheduled topic are for editors to see.
"""

from __future__ import annotations

import datetime as dt

from django.utils import timezone
from django.utils.text import slugify

from topics.models import CommentOrder, CommentStorage, Topic, TopicStatus
from topics.services import tags_get_or_create

TOPICS = [
    ("Welcome to Commons", CommentStorage.DOCUMENT, CommentOrder.THREADED, ["mongodb", "threads"],
     "Every comment here is its own MongoDB document. Threads sort by full_slug, a path of time-stamped slugs."),
    ("Release notes, in order", CommentStorage.DOCUMENT, CommentOrder.CHRONOLOGICAL, ["releases"],
     "One document per comment, shown in posting order, sorted by (posted, _id)."),
    ("A small discussion, all in one document", CommentStorage.EMBEDDED, CommentOrder.THREADED, ["mongodb", "threads"],
     "All comments live inside one discussion document, nested replies and all."),
    ("Guest book", CommentStorage.EMBEDDED, CommentOrder.CHRONOLOGICAL, ["community"],
     "Embedded comments pushed onto one array and paged with $slice."),
    ("The busiest thread on the site", CommentStorage.BUCKETED, CommentOrder.CHRONOLOGICAL, ["mongodb", "community"],
     "Comments are grouped in buckets of about a hundred: a page reads only the buckets it needs."),
]

UNPUBLISHED = [
    ("Next month's roadmap (draft)", TopicStatus.DRAFT, None,
     "A draft: only editors see it, marked as a draft, until it is published."),
    ("Scheduled: the weekly digest", TopicStatus.PUBLISHED, dt.timedelta(days=7),
     "Scheduled a week ahead: invisible to visitors, feeds and search until then."),
]


def load(ctx, out=print) -> None:
    now = timezone.now()
    for title, storage, order, tag_names, body in TOPICS:
        topic, created = Topic.objects.get_or_create(
            slug=slugify(title),
            defaults={"title": title, "body": body, "summary": body.split(". ")[0].rstrip(".") + ".",
                      "author": ctx.editor, "comment_storage": storage, "comment_order": order,
                      # social.demo sends the `publish` activities of the demo topics itself
                      "announced": now},
        )
        if created:
            topic.tags.set(tags_get_or_create(names=tag_names))
        ctx.topics.append(topic)
    for title, status, ahead, body in UNPUBLISHED:
        Topic.objects.get_or_create(
            slug=slugify(title),
            defaults={"title": title, "body": body, "summary": body, "author": ctx.editor, "status": status,
                      "publish_at": now + ahead if ahead else None},
        )
    out(f"topics: {len(ctx.topics)} live ({', '.join(sorted({t.comment_storage for t in ctx.topics}))}), "
        f"plus {len(UNPUBLISHED)} for editors only (a draft, a scheduled topic)")
