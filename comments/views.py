"""Comment pages. Thin: parse the request, call services and selectors, render.

The topic's page itself is the topics app's (`topics.views.topic_detail`); its comment section
is `topic_comments` here, registered with `topics.sections` when the app is ready.

GET pages never write. POST endpoints (post/reply/preview, edit, delete, like/unlike)
follow post-redirect-get: a success message, or the service's refusal. A refusal never
throws away what was typed: the text is kept as a draft in the session and the page the
visitor comes back to shows it in the same form with the error beside it (and a
preview, when "Preview" was pressed). Bad `page`/`order` parameters redirect to the
topic's first page with a message; a page past the last one redirects to the last page.

In-place actions: a request sent by static/js/comments.js (header `X-Requested-With:
fetch`) gets the re-rendered comment as an HTML fragment instead of a redirect (or the
error as JSON `{detail, code}` with the service's status), so like, reply, edit and
delete work without a reload; without JavaScript the same forms do full round trips.

Threaded pages indent at most THREAD_DISPLAY_DEPTH levels: deeper replies are left to
the permalink page, reached by a "continue this thread" link on their ancestor.
"""

import asyncio
import json
import queue as stdqueue
from urllib.parse import urlsplit

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpResponse, JsonResponse, QueryDict, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from comments import live as live_feed
from comments import selectors, services
from comments.forms import CommentForm, LikeForm
from comments.ids import is_comment_id
from comments.viewers import muted_ids
from core.errors import InvalidInput, NotAuthenticated, NotFound, ServiceError
from core.paging import DEFAULT_PAGE_SIZE, PastTheLastPage, last_page_url, parse_page_request, parse_whole_number
from core.redirects import posted_next
from topics.sections import TopicSection
from topics.selectors import topic_get

THREAD_DISPLAY_DEPTH = 5  # levels shown indented on a topic page (depth 0..4)
DRAFT_KEY = "comment_draft"


def _topic(request, slug):
    try:
        return topic_get(slug=slug, viewer=request.user)
    except NotFound as exc:
        raise Http404(exc.message) from None


def _page_url(topic, *, page: int, order: str, comment_id: str | None = None) -> str:
    url = topic.get_absolute_url() + "?" + urlencode({"page": page, "order": order})
    return url + (f"#c-{comment_id}" if comment_id else "")


def _permalink(topic, comment_id: str) -> str:
    return reverse("comment-permalink", kwargs={"slug": topic.slug, "comment_id": comment_id})


def _in_place(request) -> bool:
    return request.headers.get("X-Requested-With") == "fetch"


def _keep_draft(request, topic, *, text: str, error: str = "", parent: str = "", edit: str = "", preview: str = ""):
    """Remember what was typed (and why it was refused) for the next page of this topic."""
    request.session[DRAFT_KEY] = {"topic": topic.slug, "text": text[:100_000], "error": error, "parent": parent,
                                  "edit": edit, "preview": preview}


def _take_draft(request, topic) -> dict | None:
    draft = request.session.get(DRAFT_KEY)
    if not isinstance(draft, dict) or draft.get("topic") != topic.slug:
        return None
    del request.session[DRAFT_KEY]
    return draft


def _fragment(request, topic, comment, *, depth: int | None = None, indent: bool = True, status: int = 200):
    # Rendered right after the viewer's own write (post, edit, like): the like state from the primary.
    liked = selectors.comment_liked_ids(topic=topic, comment_ids=[comment.id], viewer=request.user, fresh=True)
    html = render_to_string("comments/_comment.html", {
        "topic": topic, "comment": selectors.mask(comment, request.user),
        "depth": comment.depth if depth is None else depth, "indent": indent,
        "liked": liked, "here": posted_next(request, topic.get_absolute_url()), "highlight": False,
        "max_text": settings.COMMENTS_MAX_TEXT,
    }, request=request)
    return HttpResponse(html, status=status)


def _refusal(request, exc: ServiceError):
    return JsonResponse({"detail": exc.message, "code": exc.code}, status=exc.status_code)


def _continue_links(items: list) -> list:
    """Hide comments deeper than the display bound; their shown ancestor links to its permalink."""
    shown = [c for c in items if c.depth < THREAD_DISPLAY_DEPTH]
    by_id = {c.id: c for c in shown}
    for comment in items:
        if comment.depth >= THREAD_DISPLAY_DEPTH:
            anchor = by_id.get(comment.path.split("/")[THREAD_DISPLAY_DEPTH - 1])
            if anchor is not None:
                anchor.continue_thread = True
    return shown


def _context(request, topic, **extra) -> dict:
    draft = _take_draft(request, topic)
    return {"topic": topic, "draft": draft, "max_text": settings.COMMENTS_MAX_TEXT,
            "edit_minutes": settings.COMMENTS_EDIT_WINDOW // 60, "here": request.get_full_path(),
            "muted": muted_ids(request.user),  # authors the viewer muted: their comments collapse
            # why the viewer may not write at all (a ban), shown instead of the form and each comment's controls
            "refused": services.comments_refused_to(request.user), **extra}


def topic_comments(request, topic):
    """The comment section of a topic's page (`topics.sections`, registered in
    `CommentsConfig.ready()`): one page of comments in the order asked for, the order toggle,
    the form, the pinned comments and the pager, as a `TopicSection`; or the redirect that a
    bad `page`/`order`/`cursor` gets instead of the page."""
    try:
        req = parse_page_request(request.GET)
        page = selectors.comment_page(topic=topic, order=request.GET.get("order"), request=req, viewer=request.user,
                                      cursor=request.GET.get("cursor"))
    except InvalidInput as exc:
        messages.error(request, exc.message)
        order = request.GET.get("order")
        if exc.field != "order" and order in selectors.comment_orders(topic=topic):
            return redirect(_page_url(topic, page=1, order=order))  # a bad page or cursor keeps the order chosen
        return redirect(topic.get_absolute_url())
    except PastTheLastPage as exc:  # an old link to a page that moved or shrank: the last page
        return redirect(last_page_url(request, exc))
    except NotFound as exc:
        raise Http404(exc.message) from None
    order = page.extra["order"]
    if request.GET.get("cursor") and not page.items and page.count:
        # A cursor past every comment (the comments around it moved, or a link into hot order
        # started at the first comment and its Previous named nothing): that order's first page.
        return redirect(_page_url(topic, page=1, order=order))
    signed_in = request.user.is_authenticated
    orders = [(o, selectors.ORDER_LABELS.get(o, o)) for o in selectors.comment_orders(topic=topic)
              if o != selectors.FOLLOWING or signed_in]  # nobody to follow first for an anonymous reader
    query = urlencode({"order": order}) + "&"
    if req.page_size != DEFAULT_PAGE_SIZE:
        query += urlencode({"page_size": req.page_size}) + "&"
    indent = order == "threaded"
    items = _continue_links(page.items) if indent else page.items
    # A threaded page that starts inside a thread shows the comment it continues (one read).
    continues = None
    if indent and items and items[0].depth > 0 and items[0].parent:
        try:
            continues = selectors.comment_get(topic=topic, comment_id=items[0].parent, viewer=request.user)
        except NotFound:
            continues = None
    return TopicSection(template="comments/_topic_comments.html", head="comments/_topic_head.html", context=_context(
        request, topic, page=page, items=items, order=order, orders=orders, query=query, indent=indent,
        liked=page.extra["liked"], continues=continues,
        # Pinned comments above the first page; in their place on that page a short link up to them.
        pinned=page.extra["pinned"], pinned_ids={c.id for c in page.extra["pinned"]},
        # Threaded and hot pages step by keyset cursors (at the floor); page numbers stay for jumps,
        # but not in hot order, whose keys move with every like (page 1, then cursors).
        cursor_links=order not in ("chronological", selectors.NEWEST), via_cursor=bool(request.GET.get("cursor")),
        cursor_only=order in (selectors.HOT, selectors.FOLLOWING),
        # "N people you follow commented" (signed-in readers; read once with a following page)
        followed=selectors.followed_commenters(topic=topic, viewer=request.user,
                                               participants=page.extra.get("followed")),
        following_part=page.extra.get("following_part", ()),
        poll_seconds=settings.COMMENTS_POLL_SECONDS, live=settings.COMMENTS_LIVE,
        # New comments go straight into the list only where they belong at its end: the last
        # chronological page; elsewhere (other orders, earlier pages) the "N new comments" notice.
        live_tail=order == "chronological" and not page.has_next and not page.extra.get("next")))


def comments_new(request, slug):
    """`?after=N` (the count the page was shown with): the comments posted since, for the page's
    "N new comments" notice, as JSON {count, more, last, ids, html} (html: the comments as the
    page shows them, oldest first). Polled by comments.js; one indexed read."""
    topic = _topic(request, slug)
    try:
        after = parse_whole_number(request.GET.get("after"), name="after", default=None, minimum=0)
        if after is None:
            raise InvalidInput("after is required.", field="after")
        page = selectors.comments_after(topic=topic, after=after, viewer=request.user)
    except InvalidInput as exc:
        return _refusal(request, exc)
    liked = selectors.comment_liked_ids(topic=topic, comment_ids=[c.id for c in page.items], viewer=request.user)
    context = {"topic": topic, "depth": 0, "indent": False, "liked": liked, "highlight": False,
               "here": topic.get_absolute_url(), "max_text": settings.COMMENTS_MAX_TEXT,
               "muted": muted_ids(request.user),
               "refused": services.comments_refused_to(request.user) if page.items else ""}
    html = "".join(render_to_string("comments/_comment.html", {**context, "comment": c}, request=request)
                   for c in page.items)
    last = max((c.seq for c in page.items), default=after)
    response = JsonResponse({"count": len(page.items), "more": bool(page.extra.get("next")), "last": last,
                             "ids": [c.id for c in page.items], "html": html})
    response["Cache-Control"] = "private, no-store"
    return response


def comment_permalink(request, slug, comment_id):
    topic = _topic(request, slug)
    try:
        thread = selectors.comment_thread(topic=topic, comment_id=comment_id, viewer=request.user)
        order = topic.comment_order
        number = selectors.comment_page_of(topic=topic, comment=thread[0], order=order)
    except NotFound as exc:
        raise Http404(exc.message) from None
    root_depth = thread[0].depth
    for comment in thread:
        comment.relative_depth = comment.depth - root_depth
    liked = selectors.comment_liked_ids(topic=topic, comment_ids=[c.id for c in thread], viewer=request.user)
    return render(request, "comments/comment_permalink.html", _context(
        request, topic, comment=thread[0], thread=thread, liked=liked,
        page_url=_page_url(topic, page=number, order=order, comment_id=comment_id), page_number=number))


def comment_revisions(request, slug, comment_id):
    topic = _topic(request, slug)
    try:
        comment = selectors.comment_get(topic=topic, comment_id=comment_id, viewer=request.user)
        revisions = selectors.comment_revisions(topic=topic, comment_id=comment_id, user=request.user)
    except NotAuthenticated:
        return redirect_to_login(request.get_full_path())
    except NotFound as exc:
        raise Http404(exc.message) from None
    except ServiceError as exc:
        messages.error(request, exc.message)
        return redirect(_permalink(topic, comment_id))
    return render(request, "comments/comment_revisions.html", {"topic": topic, "comment": comment,
                                                                "revisions": revisions})


@require_POST
def comment_post(request, slug):
    topic = _topic(request, slug)
    form = CommentForm(request.POST)
    fallback = topic.get_absolute_url()
    if not form.is_valid():  # only malformed submissions get here: every field is an optional string
        messages.error(request, "The comment form was incomplete; nothing was posted.")
        return redirect(posted_next(request, fallback))
    text, parent = form.cleaned_data["text"], form.cleaned_data["parent"] or ""
    back = posted_next(request, fallback)
    # The service refuses a malformed parent; only a well-formed id is echoed back (anchor, kept draft).
    shown_parent = parent if is_comment_id(parent) else ""
    anchor = f"#c-{shown_parent}" if shown_parent else "#comment-form"
    if "preview" in request.POST:
        _keep_draft(request, topic, text=text, parent=shown_parent, preview=services.comment_render(text=text.strip()))
        return redirect(back.split("#")[0] + anchor)
    try:
        comment = services.comment_create(topic=topic, author=request.user, text=text, parent=parent or None)
    except NotAuthenticated as exc:
        if _in_place(request):
            return _refusal(request, exc)
        messages.error(request, exc.message)
        return redirect_to_login(back)
    except ServiceError as exc:
        if _in_place(request):
            return _refusal(request, exc)
        _keep_draft(request, topic, text=text, parent=shown_parent, error=exc.message)
        messages.error(request, f"Not posted: {exc.message} Your text is still in the form.")
        return redirect(back.split("#")[0] + anchor)
    if _in_place(request):
        return _fragment(request, topic, comment, status=201)
    if getattr(comment, "held", False):  # held for review: not in the discussion yet
        if comment.status == "pending":
            messages.success(request, "Thank you: your comment is awaiting moderation. Only you and the editors see it "
                                      "until an editor approves it.")
        else:
            messages.success(request, "Your comment was posted.")
        return redirect(topic.get_absolute_url() + "#held")
    messages.success(request, "Your reply was posted." if comment.parent else "Your comment was posted.")
    order, page_size = _reading(topic, back)
    place = selectors.comment_place(topic=topic, comment=comment, order=order, page_size=page_size)
    if page_size != DEFAULT_PAGE_SIZE:
        place["page_size"] = page_size
    return redirect(f"{topic.get_absolute_url()}?{urlencode(place)}#c-{comment.id}")


def _reading(topic, back: str) -> tuple[str, int]:
    """The order and page size of the page the form was posted from (its `next`), parsed like
    the page's own query; anything unknown or malformed falls back to the topic's order and the
    default size. After posting, the writer lands on their comment in the order they were reading."""
    query = QueryDict(urlsplit(back).query)
    order = query.get("order")
    if order not in selectors.comment_orders(topic=topic):
        order = topic.comment_order
    try:
        page_size = parse_page_request(query).page_size
    except InvalidInput:
        page_size = DEFAULT_PAGE_SIZE
    return order, page_size


def _attempt(request, action, *, back: str, refused):
    """Run `action` (one write service call) for a POST endpoint: `(result, None)`, or `(None,
    response)` when the service refused. An in-place request gets the refusal as JSON with its
    status; otherwise a visitor who is not signed in goes to the log-in page (then back), an
    unknown comment is a 404, and any other refusal is the endpoint's `refused(exc)`."""
    try:
        return action(), None
    except ServiceError as exc:
        if _in_place(request):
            return None, _refusal(request, exc)
        if isinstance(exc, NotAuthenticated):
            messages.error(request, exc.message)
            return None, redirect_to_login(back)
        if isinstance(exc, NotFound):
            raise Http404(exc.message) from None
        return None, refused(exc)


@require_POST
def comment_edit(request, slug, comment_id):
    topic = _topic(request, slug)
    form = CommentForm(request.POST)
    back = posted_next(request, _permalink(topic, comment_id))
    text = form.data.get("text", "") if isinstance(form.data.get("text", ""), str) else ""

    def refused(exc):
        _keep_draft(request, topic, text=text, edit=comment_id, error=exc.message)
        messages.error(request, f"Not saved: {exc.message} Your text is still in the form.")
        return redirect(back.split("#")[0] + f"#c-{comment_id}")

    comment, response = _attempt(request, lambda: services.comment_edit(
        topic=topic, comment_id=comment_id, text=text, user=request.user), back=back, refused=refused)
    if response is not None:
        return response
    if _in_place(request):
        return _fragment(request, topic, comment)
    messages.success(request, "Your changes were saved.")
    return redirect(back.split("#")[0] + f"#c-{comment.id}")


@require_POST
def comment_delete(request, slug, comment_id):
    topic = _topic(request, slug)
    back = posted_next(request, _permalink(topic, comment_id))

    def refused(exc):
        messages.error(request, exc.message)
        return redirect(back)

    comment, response = _attempt(request, lambda: services.comment_delete(
        topic=topic, comment_id=comment_id, user=request.user), back=back, refused=refused)
    if response is not None:
        return response
    if _in_place(request):
        return _fragment(request, topic, comment)
    messages.success(request, "The comment was deleted.")
    return redirect(back.split("#")[0] + f"#c-{comment.id}")


@require_POST
def comment_like(request, slug, comment_id):
    topic = _topic(request, slug)
    form = LikeForm(request.POST)
    back = posted_next(request, _permalink(topic, comment_id))
    if not form.is_valid():
        messages.error(request, "Unknown like action.")
        return redirect(back)
    action = services.comment_like if form.cleaned_data["action"] == "like" else services.comment_unlike

    def refused(exc):
        messages.error(request, exc.message)
        return redirect(back)

    comment, response = _attempt(request, lambda: action(topic=topic, comment_id=comment_id, user=request.user),
                                 back=back, refused=refused)
    if response is not None:
        return response
    if _in_place(request):
        return _fragment(request, topic, comment)
    verb = "Liked" if form.cleaned_data["action"] == "like" else "Unliked"
    messages.success(request, f"{verb}: {comment.likes} like{'' if comment.likes == 1 else 's'}.")
    return redirect(back if "#" in back else f"{back}#c-{comment.id}")


# --- the live stream -------------------------------------------------------------------------

def _sse(event: str | None = None, data=None, token: str | None = None) -> str:
    """One Server-Sent Events message (the WHATWG "event stream" format): `id:` only on the last
    message of a change, so a client that drops mid-change resumes before it, not after."""
    lines = [f"event: {event}"] if event else []
    if data is not None:
        lines.append("data: " + json.dumps(data, separators=(",", ":")))
    if token is not None:
        lines.append(f"id: {token}")
    return "\n".join(lines) + "\n\n"


class _Live:
    """What one open stream shows its viewer: the stored comments a change touched, each masked
    for the viewer (comments.selectors.live_comment) and rendered by the template the page uses."""

    def __init__(self, request, topic, viewer):
        self.request, self.topic, self.viewer = request, topic, viewer
        self.context = {"topic": topic, "indent": True, "highlight": False, "here": topic.get_absolute_url(),
                        "max_text": settings.COMMENTS_MAX_TEXT, "muted": muted_ids(viewer),
                        "refused": services.comments_refused_to(viewer)}

    def render(self, comment, *, new: bool) -> dict:
        liked = selectors.comment_liked_ids(topic=self.topic, comment_ids=[comment.id], viewer=self.viewer)
        html = render_to_string("comments/_comment.html", {**self.context, "comment": comment, "liked": liked,
                                                            "depth": comment.depth}, request=self.request)
        return {"id": comment.id, "seq": comment.seq, "parent": comment.parent or "", "depth": comment.depth,
                "new": new, "likes": comment.likes, "status": comment.status, "html": html}

    def change(self, change) -> str:
        """The messages of one change (`comments.live.Change`); an `id:`-only message when the viewer
        sees nothing of it. Anonymous viewers all see the same: rendered once per change and process."""
        if change.lost:
            return _sse("reset", {"detail": "The stream lost its place: reload the page."})
        if change.closed:
            return ""
        if self.viewer.is_authenticated or self.context["muted"]:
            return self._change(change)
        key = ("anonymous", timezone.get_current_timezone_name(), translation.get_language())  # what else it reads
        found = change.shared.get(key)
        if found is None:
            found = change.shared[key] = self._change(change)
        return found

    def _change(self, change) -> str:
        out = []
        for item in change.items:
            comment = selectors.live_comment(topic=self.topic, comment=item.comment, new=item.new, viewer=self.viewer)
            if comment is not None:
                shown = selectors.can_see(comment, self.viewer)
                out.append(("comment" if shown else "hidden", self.render(comment, new=item.new and shown)))
        if not out:
            return _sse(token=change.token)
        return "".join(_sse(kind, data, change.token if i == len(out) - 1 else None) for i, (kind, data) in enumerate(out))

    def since(self, after: int) -> str:
        """The comments posted after sequence number `after` (the page's count when it was shown):
        what a fresh stream owes the page rendered before it connected (one indexed read)."""
        page = selectors.comments_after(topic=self.topic, after=after, viewer=self.viewer)
        return "".join(_sse("comment", self.render(c, new=True)) for c in page.items)


def _live_start(request, slug, deliver):
    """Parse and check a stream request, then subscribe (sync: the ORM, the hub's start):
    (live, storage, token, after, hub, subscriber), or raise."""
    topic = _topic(request, slug)  # the topic's visibility for this viewer: a 404 otherwise
    raw = request.headers.get("Last-Event-ID") or request.GET.get("last_event_id")
    token = live_feed.decode_token(raw) if raw else None
    after = None if token else parse_whole_number(request.GET.get("after"), name="after", default=None, minimum=0)
    hub = live_feed.hub(topic.comment_storage)
    sub = hub.subscribe(topic.discussion_id, deliver)
    return _Live(request, topic, request.user), topic.comment_storage, token, after, hub, sub


async def topic_live(request, slug):
    """`GET /t/<slug>/live/`: the topic's changes as Server-Sent Events (docs/comments.md, "Live
    updates"): `comment` (a new or changed comment the viewer may see, rendered as the page renders
    it), `hidden` (a comment the viewer may no longer see: its placeholder), `reset` (the stream
    cannot resume: reload); each change's last message carries its resume token as `id`. With
    `Last-Event-ID` (or `?last_event_id=`) it resumes after that change; otherwise `?after=N`
    first sends the comments posted after N. Served by an async generator under ASGI (an open
    stream holds no thread), by a thread under WSGI (`make run`'s development server)."""
    if not settings.COMMENTS_LIVE:
        raise Http404("Live updates are off on this site.")
    await request.auser()  # the session's user, loaded here (not lazily inside the sync calls' threads)
    asgi = "asgi" in type(request).__module__
    if asgi:
        loop, waiting = asyncio.get_running_loop(), asyncio.Queue()

        def deliver(change):  # on the hub's thread
            loop.call_soon_threadsafe(waiting.put_nowait, change)
    else:
        waiting = stdqueue.Queue()
        deliver = waiting.put
    try:
        started = await sync_to_async(_live_start)(request, slug, deliver)
    except InvalidInput as exc:
        return _refusal(request, exc)
    except live_feed.FeedUnavailable:  # the page polls instead (static/js/comments.js)
        return JsonResponse({"detail": "Live updates need change streams, which this database does not offer.",
                             "code": "live_unavailable"}, status=503)
    response = StreamingHttpResponse((_live_async if asgi else _live_sync)(waiting, *started),
                                     content_type="text/event-stream")
    response["Cache-Control"] = "no-cache, no-store"
    response["X-Accel-Buffering"] = "no"  # nginx: pass each message on at once (docs/deploy.md)
    return response


def _opening(live, storage, token, after, sub) -> tuple[list[str], set[str] | None]:
    """The stream's first messages (sync: reads): the replay after `token`, or the comments since
    `after` and the hub's position as the first `id`; and the replayed tokens (to drop repeats),
    None when the stream has to end (it cannot resume)."""
    out = ["retry: 2000\n\n"]
    if token is not None:
        try:
            replayed = live_feed.catch_up(storage, live.topic.discussion_id, after=token, until=sub.position)
        except live_feed.ResumeLost:
            return out + [_sse("reset", {"detail": "The stream cannot resume from there: reload the page."})], None
        return out + [live.change(c) for c in replayed], {c.token for c in replayed}
    if after is not None:
        out.append(live.since(after))
    if sub.position:
        out.append(_sse(token=sub.position))
    return out, set()


async def _live_async(waiting, live, storage, token, after, hub, sub):
    try:
        opening, seen = await sync_to_async(_opening)(live, storage, token, after, sub)
        for message in opening:
            yield message
        if seen is None:
            return
        while True:
            change = await waiting.get()  # a change, or the hub's heartbeat (comments/live.py): no timer here
            if change.beat:
                yield ": heartbeat\n\n"
                continue
            if change.token in seen:
                continue
            if waiting.qsize() > live_feed.QUEUE_MAX:  # a reader that does not keep up starts afresh
                change = live_feed.Change(None, lost=True)
            yield await sync_to_async(live.change)(change)
            if change.lost or change.closed:
                return
    finally:
        hub.unsubscribe(sub)


def _live_sync(waiting, live, storage, token, after, hub, sub):
    try:
        opening, seen = _opening(live, storage, token, after, sub)
        yield from opening
        if seen is None:
            return
        while True:
            try:
                # The hub hands a heartbeat every HEARTBEAT_SECONDS; waiting twice that long without one,
                # the thread writes its own, so a closed client still ends it (the write fails).
                change = waiting.get(timeout=2 * live_feed.HEARTBEAT_SECONDS)
            except stdqueue.Empty:
                change = live_feed.HEARTBEAT
            if change.beat:
                yield ": heartbeat\n\n"
                continue
            if change.token in seen:
                continue
            yield live.change(change)
            if change.lost or change.closed:
                return
    finally:
        hub.unsubscribe(sub)
