"""Comment pages. Thin: parse the request, call services and selectors, render."""

from django.shortcuts import get_object_or_404, render

from cms_site.models import Topic


def topic_detail(request, slug):
    topic = get_object_or_404(Topic.objects.select_related("author"), slug=slug)
    return render(request, "comments/topic_detail.html", {"topic": topic})
