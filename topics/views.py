"""Topic pages: the home page (topics, newest first) and tag pages. Thin: parse, call, render.
Each topic's comment count comes from the comments app's `with_comment_counts` template filter."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render

from core.errors import InvalidInput, NotFound
from core.paging import parse_page_request
from topics import selectors


def home(request):
    try:
        req = parse_page_request(request.GET, default_size=10, max_size=100)
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return redirect("home")
    try:
        page = selectors.topic_page(viewer=request.user, request=req)
    except NotFound as exc:
        raise Http404(exc.message) from None
    return render(request, "topics/home.html", {"page": page})


def tag_detail(request, slug):
    try:
        tag = selectors.tag_get(slug=slug)
    except NotFound as exc:
        raise Http404(exc.message) from None
    try:
        req = parse_page_request(request.GET, default_size=10, max_size=100)
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return redirect(tag.get_absolute_url())
    try:
        page = selectors.topic_page(viewer=request.user, request=req, tag=tag)
    except NotFound as exc:
        raise Http404(exc.message) from None
    return render(request, "topics/home.html", {"page": page, "tag": tag})
