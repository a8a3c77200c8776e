"""Moderation pages. Thin: parse, call services and selectors, render or redirect.

- POST /t/{slug}/c/{id}/flag/  any signed-in user reports a comment (a message says
  whether the flag was new), then back to the comment, the message shown beside it too;
  a request from static/js/comments.js (`X-Requested-With: fetch`) gets JSON
  `{created, detail}` (201 for a new flag, 200 for a repeated one) or `{detail, code}`
  with the refusal's status instead (a 429 comes from the rate limit, with `retry_after`);
- POST /t/{slug}/c/{id}/moderate/  editors: one action from a comment's menu on the topic
  page (remove, hide, restore, pin, unpin, ban the author, ...), then back to the comment;
  a request from static/js/comments.js (`X-Requested-With: fetch`) gets JSON
  `{changed, detail, html}` (`html`: the comment re-rendered as the page shows it, absent
  for a held submission) or `{detail, code}` with the refusal's status instead;
- /moderation/                 editors: the site-wide queue (tabs, filters, word search,
  bulk actions), in the admin's look and linked from the admin index;
- POST /moderation/act/        editors: the queue workspace's one action (JSON): `action` and
  `entries` (or, to undo an author action, `user_action` and `usernames`); answers
  `{changed, detail, undo, counts}`, where `undo` lists the actions that put back what changed;
- /moderation/author/?username=  editors: the workspace's author drawer (an HTML fragment);
- /moderation/counts/          editors: the tabs' counts (JSON), which the workspace polls;
- /moderation/log/             editors: the audit log;
- /moderation/users/           editors: bans, shadow bans and pre-moderated users.

"Editors" are users holding the moderation permission (core.permissions.can_moderate),
staff or not: a visitor who is not signed in goes to the log-in page, a signed-in user
without the permission gets a 403.
"""

from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect, JsonResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from comments import selectors as comment_selectors
from comments.ids import is_comment_id
from core.errors import Forbidden, InvalidInput, NotAuthenticated, NotFound, ServiceError
from core.paging import PastTheLastPage, last_page_url, parse_page_request
from core.permissions import can_moderate, require_moderator
from core.redirects import posted_next
from moderation import selectors, services
from moderation.forms import (
    ACTION_CHOICES,
    BanForm,
    FlagForm,
    MenuActionForm,
    QueueActionForm,
    UserActionForm,
    changed_message,
)
from topics.selectors import topic_get

TAB_LABELS = {"reported": "Reported", "pending": "Pending", "removed": "Removed", "all": "All"}


def _in_place(request) -> bool:
    return request.headers.get("X-Requested-With") == "fetch"


@require_POST
def comment_flag(request, slug, comment_id):
    try:
        topic = topic_get(slug=slug, viewer=request.user)
    except NotFound as exc:
        raise Http404(exc.message) from None
    back = posted_next(request, reverse("comment-permalink", kwargs={"slug": topic.slug, "comment_id": comment_id}))
    if "#" not in back and is_comment_id(comment_id):
        back += f"#c-{comment_id}"
    # The message is tagged with the comment it is about: the comment shows it beside its actions.
    near = f"c-{comment_id}" if is_comment_id(comment_id) else ""
    form = FlagForm(request.POST)
    try:
        if not form.is_valid():
            raise InvalidInput("choose a reason (and keep the note under 500 characters).", field="reason")
        result = services.flag_create(topic=topic, comment_id=comment_id, user=request.user,
                                      reason=form.cleaned_data["reason"], note=form.cleaned_data["note"])
    except ServiceError as exc:
        if _in_place(request):
            return JsonResponse({"detail": f"Not reported: {exc.message}", "code": exc.code},
                                status=exc.status_code)
        if isinstance(exc, NotAuthenticated):
            messages.error(request, exc.message)
            return redirect_to_login(back)
        if isinstance(exc, NotFound):
            raise Http404(exc.message) from None
        messages.error(request, f"Not reported: {exc.message}", extra_tags=near)
        return redirect(back)
    detail = ("Thank you: the editors will review this comment." if result.created
              else "You have already reported this comment.")
    if _in_place(request):
        return JsonResponse({"created": result.created, "detail": detail}, status=201 if result.created else 200)
    (messages.success if result.created else messages.info)(request, detail, extra_tags=near)
    return redirect(back)


def moderators_only(view):
    """Editors only: the log-in page for a visitor, a 403 for anyone without the permission."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not can_moderate(request.user):
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return wrapper


@require_POST
def comment_moderate(request, slug, comment_id):
    """One action from a comment's moderation menu, through the pipeline, then back to the comment."""
    try:
        topic = topic_get(slug=slug, viewer=request.user)
    except NotFound as exc:
        raise Http404(exc.message) from None
    back = posted_next(request, topic.get_absolute_url())  # the menu sends the page it is on
    if "#" not in back and is_comment_id(comment_id):
        back += f"#c-{comment_id}"
    form = MenuActionForm(request.POST)
    try:
        require_moderator(request.user)  # before anything else is said about the request
        if not form.is_valid():
            raise InvalidInput(f"action must be one of {', '.join(a for a, _ in ACTION_CHOICES)}.", field="action")
        action = form.cleaned_data["action"]
        done = services.comment_moderate(topic=topic, comment_ids=[comment_id], action=action, moderator=request.user)
    except ServiceError as exc:
        if _in_place(request):
            return JsonResponse({"detail": exc.message, "code": exc.code}, status=exc.status_code)
        if isinstance(exc, NotAuthenticated):
            return redirect_to_login(back)
        if isinstance(exc, Forbidden):
            raise PermissionDenied(exc.message) from None
        if isinstance(exc, NotFound):
            raise Http404(exc.message) from None
        messages.error(request, exc.message)
        return redirect(back)
    detail = changed_message(action, done) if done else "Nothing to change: it already was so."
    if _in_place(request):
        body = {"changed": done, "detail": detail}
        html = _comment_html(request, topic, comment_id, here=back.split("#")[0])
        if html is not None:
            body["html"] = html
        return JsonResponse(body)
    (messages.success if done else messages.info)(request, detail)
    return redirect(back)


def _comment_html(request, topic, comment_id: str, *, here: str) -> str | None:
    """The comment as the topic page shows it to this editor, after the action (the same
    template and context as the comment pages' in-place answers); None for a held submission."""
    try:
        comment = comment_selectors.comment_get(topic=topic, comment_id=comment_id, viewer=request.user)
    except NotFound:
        return None
    liked = comment_selectors.comment_liked_ids(topic=topic, comment_ids=[comment.id], viewer=request.user)
    return render_to_string("comments/_comment.html", {
        "topic": topic, "comment": comment, "depth": comment.depth, "indent": True, "liked": liked, "here": here,
        "highlight": False, "max_text": settings.COMMENTS_MAX_TEXT,
    }, request=request)


def _admin_context(request, title):
    from django.contrib import admin

    return {**admin.site.each_context(request), "title": title}


@moderators_only
def queue(request):
    params = request.GET
    view = params.get("state") or "reported"
    if request.method == "POST":
        form = QueueActionForm(request.POST)
        back = request.get_full_path()
        if not form.is_valid():
            messages.error(request, " ".join(e for errors in form.errors.values() for e in errors))
            return HttpResponseRedirect(back)
        try:
            done = services.queue_moderate(entry_ids=form.cleaned_data["entries"], action=form.cleaned_data["action"],
                                           moderator=request.user)
        except ServiceError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, changed_message(form.cleaned_data["action"], done))
        return HttpResponseRedirect(back)
    try:
        page = selectors.queue_page(viewer=request.user, view=view, topic=params.get("topic"), author=params.get("author"),
                                    q=params.get("q"), cursor=params.get("cursor"), size=params.get("page_size"))
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return redirect("moderation-queue")
    counts = selectors.queue_counts(viewer=request.user)
    filters = {k: params[k] for k in ("topic", "author", "q", "page_size") if params.get(k)}
    tabs = [(key, label, counts[key], "?" + urlencode({"state": key, **filters})) for key, label in TAB_LABELS.items()]
    next_url = "?" + urlencode({"state": view, **filters, "cursor": page.next_cursor}) if page.next_cursor else None
    context = {
        **_admin_context(request, f"Moderation queue: {TAB_LABELS[view]}"), "page": page, "view": view, "tabs": tabs,
        "filters": filters, "next_url": next_url, "first_url": "?" + urlencode({"state": view, **filters}),
        "actions": ACTION_CHOICES, "paged": bool(params.get("cursor")),
    }
    return TemplateResponse(request, "moderation/queue.html", context)


def _json_moderators_only(view):
    """The workspace's JSON endpoints: a refusal is the API's error shape, never a redirect."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return JsonResponse({"detail": "Sign in first.", "code": "not_authenticated"}, status=401)
        if not can_moderate(request.user):
            return JsonResponse({"detail": "Editors only.", "code": "forbidden"}, status=403)
        return view(request, *args, **kwargs)

    return wrapper


@require_POST
@_json_moderators_only
def queue_act(request):
    """One action of the workspace (a key press) on the entries it names, through the one pipeline."""
    try:
        if "user_action" in request.POST:
            done = services.users_undo(usernames=request.POST.getlist("usernames"),
                                       user_action=request.POST.get("user_action"), moderator=request.user)
            detail, undo = f"Undone: {done} user{'s' if done != 1 else ''}.", []
        else:
            form = QueueActionForm(request.POST)
            if not form.is_valid():
                raise InvalidInput(" ".join(e for errors in form.errors.values() for e in errors), field="entries")
            acted = services.queue_act(entry_ids=form.cleaned_data["entries"], action=form.cleaned_data["action"],
                                       moderator=request.user)
            done, undo = acted.changed, acted.undo
            detail = changed_message(form.cleaned_data["action"], done) if done else "Nothing to change: it already was so."
    except ServiceError as exc:
        return JsonResponse({"detail": exc.message, "code": exc.code}, status=exc.status_code)
    return JsonResponse({"changed": done, "detail": detail, "undo": undo,
                         "counts": selectors.queue_counts(viewer=request.user)})


@_json_moderators_only
def queue_counts(request):
    return JsonResponse({"counts": selectors.queue_counts(viewer=request.user)})


@moderators_only
def author_panel(request):
    try:
        history = selectors.author_history(viewer=request.user, username=request.GET.get("username"))
    except InvalidInput as exc:
        return TemplateResponse(request, "moderation/_author.html", {"error": exc.message}, status=400)
    return TemplateResponse(request, "moderation/_author.html", {"history": history})


@moderators_only
def log(request):
    try:
        page = selectors.log_page(viewer=request.user, cursor=request.GET.get("cursor"), size=request.GET.get("page_size"))
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return redirect("moderation-log")
    next_url = "?" + urlencode({"cursor": page.next_cursor}) if page.next_cursor else None
    return TemplateResponse(request, "moderation/log.html", {**_admin_context(request, "Moderation log"), "page": page,
                                                             "next_url": next_url})


@moderators_only
def users(request):
    if request.method == "POST":
        if "action" in request.POST:
            form = UserActionForm(request.POST)
            if form.is_valid():
                name, action = form.cleaned_data["username"], form.cleaned_data["action"]
                try:
                    if action == "unban":
                        services.ban_delete(username=name, moderator=request.user)
                    else:
                        services.user_set_premoderation(username=name, premoderated=action == "premoderate",
                                                        moderator=request.user)
                    messages.success(request, f"{name}: done.")
                except ServiceError as exc:
                    messages.error(request, exc.message)
            else:
                messages.error(request, "Unknown action.")
        else:
            form = BanForm(request.POST)
            if form.is_valid():
                try:
                    restriction = services.ban_create(moderator=request.user, **form.cleaned_data).restriction
                    messages.success(request, f"{restriction.user.username}: {restriction.describe()}.")
                except ServiceError as exc:
                    messages.error(request, exc.message)
            else:
                messages.error(request, " ".join(e for errors in form.errors.values() for e in errors))
        return redirect("moderation-users")
    try:
        page = selectors.bans_page(viewer=request.user, request=parse_page_request(request.GET))
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return redirect("moderation-users")
    except PastTheLastPage as exc:  # an old link to a list that has shrunk: its last page
        return redirect(last_page_url(request, exc))
    return TemplateResponse(request, "moderation/users.html", {**_admin_context(request, "Bans and pre-moderation"),
                                                               "page": page, "form": BanForm(), "query": ""})
