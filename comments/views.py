"""Comment pages. Thin: parse the request, call services and selectors, render.

GET pages never write. POST endpoints (post/reply, like/unlike) redirect back with a
message: a success message, or the service's error message and nothing stored. Bad
`page`/`order` parameters redirect to the topic's first page with a message; a page
past the last one is a 404 (as on the home page).
"""

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.views.decorators.http import require_POST

from cms_site.errors import InvalidInput, NotAuthenticated, NotFound, ServiceError
from cms_site.paging import DEFAULT_PAGE_SIZE, parse_page_request
from comments import selectors, services
from comments.forms import CommentForm, LikeForm
from topics.selectors import topic_get


def _topic(request, slug):
    try:
        return topic_get(slug=slug, viewer=request.user)
    except NotFound as exc:
        raise Http404(exc.message) from None


def _safe_next(request, fallback: str) -> str:
    target = request.POST.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return fallback


def _page_url(topic, *, page: int, order: str, comment_id: str | None = None) -> str:
    url = topic.get_absolute_url() + "?" + urlencode({"page": page, "order": order})
    return url + (f"#c-{comment_id}" if comment_id else "")


def topic_detail(request, slug):
    topic = _topic(request, slug)
    try:
        req = parse_page_request(request.GET)
        page = selectors.comment_page(topic=topic, order=request.GET.get("order"), request=req, viewer=request.user,
                                      cursor=request.GET.get("cursor"))
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return redirect(topic.get_absolute_url())
    except NotFound as exc:
        raise Http404(exc.message) from None
    order = page.extra["order"]
    orders = [(o, selectors.ORDER_LABELS.get(o, o)) for o in selectors.comment_orders(topic=topic)]
    query = urlencode({"order": order}) + "&"
    if req.page_size != DEFAULT_PAGE_SIZE:
        query += urlencode({"page_size": req.page_size}) + "&"
    return render(request, "comments/topic_detail.html", {
        "topic": topic, "page": page, "order": order, "orders": orders, "query": query,
        "indent": order == "threaded", "liked": page.extra["liked"], "form": CommentForm(),
        "here": request.get_full_path(),
        # Threaded and hot pages step by keyset cursors (at the floor); page numbers stay for jumps.
        "cursor_links": order != "chronological", "via_cursor": bool(request.GET.get("cursor")),
    })


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
    return render(request, "comments/comment_permalink.html", {
        "topic": topic, "comment": thread[0], "thread": thread, "liked": liked, "form": CommentForm(),
        "page_url": _page_url(topic, page=number, order=order, comment_id=comment_id), "page_number": number,
        "here": request.get_full_path(),
    })


@require_POST
def comment_post(request, slug):
    topic = _topic(request, slug)
    form = CommentForm(request.POST)
    fallback = topic.get_absolute_url()
    if not form.is_valid():  # only malformed submissions get here: every field is an optional string
        messages.error(request, "The comment form was incomplete; nothing was posted.")
        return redirect(_safe_next(request, fallback))
    try:
        comment = services.comment_create(topic=topic, author=request.user, text=form.cleaned_data["text"],
                                          parent=form.cleaned_data["parent"] or None)
    except NotAuthenticated as exc:
        messages.error(request, exc.message)
        return redirect_to_login(_safe_next(request, fallback))
    except ServiceError as exc:
        messages.error(request, f"Not posted: {exc.message}")
        return redirect(_safe_next(request, fallback))
    if getattr(comment, "held", False):  # held for review: not in the discussion yet
        if comment.status == "pending":
            messages.success(request, "Thank you: your comment is awaiting moderation. Only you and the editors see it "
                                      "until an editor approves it.")
        else:
            messages.success(request, "Your comment was posted.")
        return redirect(topic.get_absolute_url() + "#held")
    messages.success(request, "Your reply was posted." if comment.parent else "Your comment was posted.")
    number = selectors.comment_page_of(topic=topic, comment=comment, order=topic.comment_order)
    return redirect(_page_url(topic, page=number, order=topic.comment_order, comment_id=comment.id))


@require_POST
def comment_like(request, slug, comment_id):
    topic = _topic(request, slug)
    form = LikeForm(request.POST)
    fallback = reverse("comment-permalink", kwargs={"slug": topic.slug, "comment_id": comment_id})
    if not form.is_valid():
        messages.error(request, "Unknown like action.")
        return redirect(_safe_next(request, fallback))
    action = services.comment_like if form.cleaned_data["action"] == "like" else services.comment_unlike
    try:
        comment = action(topic=topic, comment_id=comment_id, user=request.user)
    except NotAuthenticated as exc:
        messages.error(request, exc.message)
        return redirect_to_login(_safe_next(request, fallback))
    except NotFound as exc:
        raise Http404(exc.message) from None
    except ServiceError as exc:
        messages.error(request, exc.message)
        return redirect(_safe_next(request, fallback))
    verb = "Liked" if form.cleaned_data["action"] == "like" else "Unliked"
    messages.success(request, f"{verb}: {comment.likes} like{'' if comment.likes == 1 else 's'}.")
    target = _safe_next(request, fallback)
    return redirect(target if "#" in target else f"{target}#c-{comment.id}")
