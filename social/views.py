"""Pages of the social app: profile, followers/following, feed. Thin: parse, call, render."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.usernames import user_named
from core.errors import InvalidInput, NotFound, ServiceError
from core.paging import PastTheLastPage, last_page_url, parse_page_request
from core.redirects import posted_next
from social import selectors, services


def _user_or_404(username):
    try:
        return services.user_by_username(username)
    except NotFound as exc:
        raise Http404(exc.message) from None


def _person(request, username, url_name):
    """(the active user a page's URL names, None), or (None, the redirect to that page of the user
    it names ignoring case and width: /u/ALICE/ goes to /u/alice/, as a `@ALICE` mention links)."""
    try:
        return services.user_by_username(username), None
    except NotFound as exc:
        try:
            user = user_named(username)
        except InvalidInput:
            user = None
        if user is None or not user.is_active or user.username == username:
            raise Http404(exc.message) from None
        query = request.GET.urlencode()
        return None, redirect(reverse(url_name, kwargs={"username": user.username}) + (f"?{query}" if query else ""))


def profile(request, username):
    user, elsewhere = _person(request, username, "social-profile")
    if elsewhere:
        return elsewhere
    try:
        recent = selectors.activity_by_user(user=user, cursor=request.GET.get("cursor"), limit=10, viewer=request.user)
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return redirect("social-profile", username=user.username)
    context = {"profile": selectors.profile_get(user=user, viewer=request.user, with_credits=True), "recent": recent,
               "older": request.GET.get("cursor") is not None}
    return render(request, "social/profile.html", context)


def _people(request, username, kind):
    user, elsewhere = _person(request, username, f"social-{kind}")
    if elsewhere:
        return elsewhere
    try:
        page_request = parse_page_request(request.GET, default_size=20)
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return redirect(f"social-{kind}", username=user.username)
    select = selectors.followers_page if kind == "followers" else selectors.following_page
    try:
        page = select(user=user, request=page_request)
    except PastTheLastPage as exc:  # an old link to a list that has shrunk: its last page
        return redirect(last_page_url(request, exc))
    profile = selectors.profile_get(user=user, viewer=request.user)
    return render(request, "social/people.html", {"profile": profile, "page": page, "kind": kind})


def followers(request, username):
    return _people(request, username, "followers")


def following(request, username):
    return _people(request, username, "following")


def _back(request, user):
    return redirect(posted_next(request, reverse("social-profile", kwargs={"username": user.username})))


def _relation_action(change, done: str):
    """A POST page action on another user (follow, unfollow, mute, unmute): `change(me, them)`
    from the services, `done` (formatted with the username) as the message when it changed
    something, then back to the posted `next` or the profile."""

    @login_required
    @require_POST
    def view(request, username):
        user = _user_or_404(username)
        try:
            if change(request.user, user):
                messages.success(request, done.format(username=user.username))
        except ServiceError as exc:
            messages.error(request, exc.message)
        return _back(request, user)

    return view


follow = _relation_action(lambda me, them: services.follow_create(follower=me, followee=them),
                          "You follow {username} now.")
unfollow = _relation_action(lambda me, them: services.follow_delete(follower=me, followee=them),
                            "You no longer follow {username}.")
mute = _relation_action(lambda me, them: services.mute_create(muter=me, muted=them),
                        "You muted {username}: their comments collapse and they cannot notify you.")
unmute = _relation_action(lambda me, them: services.mute_delete(muter=me, muted=them), "You unmuted {username}.")


@login_required
def feed(request):
    try:
        page = selectors.feed_page(user=request.user, cursor=request.GET.get("cursor"))
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return redirect("social-feed")
    # "N people you follow commented" beside each activity about a topic: one read for the page.
    followed = selectors.followed_commenters_by_topic(topic_ids=[a.topic_id for a in page.items], viewer=request.user)
    rows = [(a, followed.get(a.topic_id)) for a in page.items]
    return render(request, "social/feed.html", {"feed": page, "rows": rows,
                                                "older": request.GET.get("cursor") is not None})
