"""Demo moderation for `make run` (called by demo.loader.load_demo after the comments):
the demo's editor in the Editors group, and something in every tab of the queue an editor
opens at /moderation/.

- Reported: a comment with one report (still visible) and one with
  MODERATION_FLAG_THRESHOLD reports (hidden pending review, `author_only`);
- Pending: a held submission awaiting approval;
- Removed: on each document topic, its third comment (and its second is pinned), by the editor.

Through the moderation pipeline only (actions, flags, holds), so counters, statuses, the
status index and the audit log agree. Idempotent: the editor joins the group once, and a
queue that already has reported or pending entries is kept.
"""

from __future__ import annotations

from django.conf import settings

from comments.selectors import comment_page
from core.paging import PageRequest
from core.permissions import EDITORS_GROUP
from moderation import services
from moderation.managers.queue import PENDING, REPORTED, ModerationQueueManager

HELD_TEXT = "First post here! Check out my site for cheap watches."


def load(ctx, out=print) -> None:
    services.editor_add(user=ctx.editor)
    out(f"moderation: {ctx.editor.username} is in the {EDITORS_GROUP} group (the moderation permission)")
    counts = ModerationQueueManager().state_counts()
    if counts.get(REPORTED) or counts.get(PENDING):
        out("moderation: the queue already has reported or pending entries")
        return
    for document in (t for t in ctx.topics if t.comment_storage == "document"):
        first = comment_page(topic=document, order="chronological", request=PageRequest(page=1, page_size=3)).items
        if len(first) > 2:
            services.comment_moderate(topic=document, comment_ids=[first[1].id], action="pin", moderator=ctx.editor)
            services.comment_moderate(topic=document, comment_ids=[first[2].id], action="remove", moderator=ctx.editor)
    topic = next((t for t in ctx.topics if t.comment_storage == "document" and t.is_live()), None)
    if topic is None or len(ctx.people) < 2:
        out("moderation: no live document topic or too few people, queue left empty")
        return
    comments = [c for c in comment_page(topic=topic, order="chronological", request=PageRequest(page=1, page_size=20)).items
                if c.status == "visible" and c.author is not None]
    threshold = max(1, settings.MODERATION_FLAG_THRESHOLD)
    flagged = 0
    for comment, reporters in ((comments[-1], 1), (comments[-2], threshold)) if len(comments) > 1 else ():
        people = [p for p in ctx.people if p.pk != comment.author.id][:reporters]
        for reporter, reason in zip(people, ("off_topic", "spam", "abuse", "other") * reporters, strict=False):
            services.flag_create(topic=topic, comment_id=comment.id, user=reporter, reason=reason)
        flagged += 1
    services.comment_hold(topic=topic, author=ctx.people[-1], text=HELD_TEXT, reason="demo: a link in a first post")
    out(f"moderation: {flagged} reported comments on {topic.slug} (one hidden at {threshold} reports), "
        f"1 held for review by {ctx.people[-1].username}")
