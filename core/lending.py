"""Read your own write: what a service has just stored, lent to the consequences it runs in the
same thread, so that they do not read it back (the Identity Map pattern, Fowler's Patterns of
Enterprise Application Architecture: within one unit of work each record is loaded once).

A post stores a comment, then sends `comment_posted`; each receiver enqueues a task keyed by
ids (topic, comment, author), and each task reads those records back, so that in a worker it
derives its work from what is stored. Without a broker Celery runs them eagerly
(`CELERY_TASK_ALWAYS_EAGER`: `apply_async` runs the task at once, in the caller's thread), so
the three or four consequences of one post would read back, one after the other, the topic,
the comment and its author the request holds. Inside `lend(...)` the selectors that read them
(`topics.selectors.topic_stored`, `comments.selectors.comment_stored`,
`accounts`' users through `borrowed_user`) answer with the lent object instead. The same holds one
step further for a publish: the topic's activity, stored by its task, is lent to the delivery task
its `activity_recorded` signal runs (`borrowed_activity`), which would otherwise read it back: the same
values a read would return, since nothing else ran in this thread since it was stored. (A comment's
activity is delivered by the task that records it, which holds it already.)

What is lent must be what the store holds when the consequences run. A request lends what it has
just stored because its consequences run at once, in its thread, before any other write of those
records could land. Consequences that run later (the batch of many posts' consequences on a served
process's scheduler thread, `comments.services.comment_posts_announce` with `lend_many`) lend only
what they read back when they start: an edit, a delete or an account erasure landed in between.

Only the thread (the context, PEP 567) that lends sees the loan: a task in a worker, or a
request on another thread, reads the store. The loan ends with the block.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

_loan: ContextVar[dict | None] = ContextVar("lent_records", default=None)
_memo: ContextVar[dict | None] = ContextVar("unit_of_work_reads", default=None)


@contextmanager
def unit_of_work():
    """Within the block (one write service's call), `remembered` reads each key once: a record
    that two checks of the same write ask for (the author's ban for the write check, then for
    the submission gate) is loaded once (the Identity Map's "each record is loaded once"). A
    block inside another shares the outer one's reads; outside any block nothing is remembered."""
    if _memo.get() is not None:
        yield
        return
    token = _memo.set({})
    try:
        yield
    finally:
        _memo.reset(token)


def remembered(key, read):
    """`read()`'s answer, read once per `unit_of_work` block for `key` (always read outside one)."""
    memo = _memo.get()
    if memo is None:
        return read()
    if key not in memo:
        memo[key] = read()
    return memo[key]


@contextmanager
def lend(*, topic=None, comment=None, author=None, discussion_id=None, activity=None):
    """Within the block, `borrowed_*` answer with these records (those given): the topic by its
    primary key, the comment by its discussion (`discussion_id`, else the topic's) and id, the
    author by its primary key, an activity of the author log by its id."""
    with lend_many([dict(topic=topic, comment=comment, author=author, discussion_id=discussion_id,
                         activity=activity)]):
        yield


@contextmanager
def lend_many(records):
    """`lend` of several posts at once (a batch of their consequences, background/batch.py): each
    item of `records` a dict of `lend`'s arguments. Of two posts of one author in one discussion,
    `borrowed_post` answers with the newer (the higher `seq`)."""
    loan = dict(_loan.get() or {})
    for record in records:
        _add(loan, **record)
    token = _loan.set(loan)
    try:
        yield
    finally:
        _loan.reset(token)


def _add(loan: dict, *, topic=None, comment=None, author=None, discussion_id=None, activity=None) -> None:
    if topic is not None and getattr(topic, "pk", None) is not None:
        loan[("topic", topic.pk)] = topic
    if discussion_id is None and topic is not None:
        discussion_id = topic.discussion_id
    if comment is not None and discussion_id is not None:
        loan[("comment", discussion_id, comment.id)] = comment
        writer = getattr(getattr(comment, "author", None), "id", None)
        newer = loan.get(("post", discussion_id, writer))
        if newer is None or (getattr(newer, "seq", None) or 0) < (getattr(comment, "seq", None) or 0):
            loan[("post", discussion_id, writer)] = comment
    if author is not None and getattr(author, "pk", None) is not None:
        loan[("user", author.pk)] = author
    if activity is not None and getattr(activity, "id", None):
        loan[("activity", str(activity.id))] = activity


def _borrowed(*key):
    loan = _loan.get()
    return loan.get(key) if loan else None


def borrowed_topic(pk):
    """The lent topic of primary key `pk`, or None (read it)."""
    return _borrowed("topic", pk)


def borrowed_comment(discussion_id, comment_id):
    """The lent comment `comment_id` of discussion `discussion_id`, or None (read it)."""
    return _borrowed("comment", discussion_id, comment_id)


def borrowed_post(discussion_id, author_id):
    """The newest comment of `author_id` lent for discussion `discussion_id` (a post whose
    consequences run), or None."""
    return _borrowed("post", discussion_id, author_id)


def borrowed_user(pk):
    """The lent user of primary key `pk`, or None (read it)."""
    return _borrowed("user", pk)


def borrowed_activity(activity_id):
    """The lent activity of id `activity_id` (the one just stored in the author log), or None (read it)."""
    return _borrowed("activity", str(activity_id))
