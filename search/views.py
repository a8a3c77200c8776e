"""The search page. Thin: parse, call, render."""

from django.shortcuts import redirect, render

from core.errors import InvalidInput
from core.paging import PastTheLastPage, last_page_url, parse_page_request
from search import selectors


def search(request):
    """`/search/?q=`: live topics (page-numbered) and visible comments (keyset `cursor`)."""
    q = request.GET.get("q", "")
    context = {"q": q, "topics": None, "comments": [], "next_cursor": None}
    if q.strip():
        try:
            req = parse_page_request(request.GET, default_size=10, max_size=50)
            context["topics"] = selectors.topic_search(q=q, viewer=request.user, request=req)
            context["comments"], context["next_cursor"] = selectors.comment_search(
                q=q, viewer=request.user, cursor=request.GET.get("cursor"), page_size=10)
        except InvalidInput as exc:
            context["error"] = exc.message
            return render(request, "search/search.html", context, status=400)
        except PastTheLastPage as exc:  # an old link to results that have shrunk: their last page
            return redirect(last_page_url(request, exc))
    return render(request, "search/search.html", context)
