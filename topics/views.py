"""Topic pages: the home page (topics, newest first), tag pages and a topic's page. Thin: parse,
call, render. Each topic's comment count on the home and tag pages comes from the comments app's
`with_comment_counts` template filter; what a topic's page shows below the topic (its comments)
comes from the sections other apps register with `topics.sections`."""

from django.contrib import messages
from django.http import Http404, HttpResponseBase
from django.shortcuts import redirect, render

from core.errors import InvalidInput, NotFound
from core.paging import PastTheLastPage, last_page_url, parse_page_request
from topics import selectors
from topics.sections import topic_sections


def home(request):
    try:
        req = parse_page_request(request.GET, default_size=10, max_size=100)
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return redirect("home")
    try:
        page = selectors.topic_page(viewer=request.user, request=req)
    except PastTheLastPage as exc:  # an old link to a list that has shrunk: its last page
        return redirect(last_page_url(request, exc))
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
    except PastTheLastPage as exc:
        return redirect(last_page_url(request, exc))
    return render(request, "topics/home.html", {"page": page, "tag": tag})


def topic_detail(request, slug):
    try:
        topic = selectors.topic_get(slug=slug, viewer=request.user)
    except NotFound as exc:
        raise Http404(exc.message) from None
    sections = []
    for section in topic_sections():
        built = section.build(request, topic)
        if isinstance(built, HttpResponseBase):  # the section refused the request (a redirect, say)
            return built
        sections.append(built)
    return render(request, "topics/topic_detail.html", {"topic": topic, "sections": sections})
