"""Pages of notifications: the list (mark read), e-mail preferences, one-click unsubscribe,
and following a topic's discussion. Thin: parse, call, render."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from accounts.selectors import notification_email
from core.errors import InvalidInput, NotFound, ServiceError
from core.redirects import posted_next
from notifications import selectors, services
from notifications.models import KINDS, NotificationPreference
from topics.selectors import topic_get


@login_required
def notification_list(request):
    try:
        page = selectors.notifications_page(user=request.user, cursor=request.GET.get("cursor"))
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return redirect("notifications")
    return render(request, "notifications/list.html", {"page": page, "older": request.GET.get("cursor") is not None})


@login_required
def open_notification(request, notification_id):
    """The link of a notification in the list: marks it read, then goes where it points."""
    try:
        url = services.notification_open(user=request.user, notification_id=notification_id)
    except NotFound as exc:
        raise Http404(exc.message) from exc
    return redirect(url)


@login_required
@require_POST
def mark_read(request):
    raw = request.POST.getlist("id")
    try:
        ids = services.parse_ids(raw) if raw else None
        services.notification_mark_read(user=request.user, ids=ids)
    except ServiceError as exc:
        messages.error(request, exc.message)
    return redirect("notifications")


class PreferencesForm(forms.ModelForm):
    class Meta:
        model = NotificationPreference
        fields = [f"email_{k}" for k in KINDS]


@login_required
def preferences(request):
    prefs = services.preferences_of(request.user)
    form = PreferencesForm(request.POST or None, instance=prefs)
    if request.method == "POST" and form.is_valid():
        services.preferences_update(user=request.user, values={k: form.cleaned_data[f"email_{k}"] for k in KINDS})
        messages.success(request, "Your e-mail preferences are saved.")
        return redirect("notifications-preferences")
    return render(request, "notifications/preferences.html", {"form": form, "email": notification_email(user=request.user)})


@csrf_exempt  # RFC 8058 one-click: mail clients POST without a session; the signed token is the proof
def unsubscribe(request, token):
    try:
        user, kind = services.unsubscribe_parse(token)
    except NotFound as exc:
        raise Http404(exc.message) from None
    done = False
    if request.method == "POST":
        services.unsubscribe_apply(token=token)
        done = True
    label = "any notification" if kind == "all" else {"reply": "replies", "mention": "mentions", "like": "likes",
                                                      "follow": "new followers", "comment": "followed discussions"}[kind]
    return render(request, "notifications/unsubscribe.html", {"who": user.username, "label": label, "done": done})


def _back(request, topic):
    return redirect(posted_next(request, f"/t/{topic.slug}/"))


def _topic_or_404(request, slug):
    try:
        return topic_get(slug=slug, viewer=request.user)
    except NotFound as exc:
        raise Http404(exc.message) from None


@login_required
@require_POST
def subscribe(request, slug):
    topic = _topic_or_404(request, slug)
    if services.subscription_create(user=request.user, topic=topic):
        messages.success(request, "You follow this discussion: you will be told of every new comment.")
    return _back(request, topic)


@login_required
@require_POST
def unsubscribe_topic(request, slug):
    topic = _topic_or_404(request, slug)
    if services.subscription_delete(user=request.user, topic=topic):
        messages.success(request, "You no longer follow this discussion.")
    return _back(request, topic)
