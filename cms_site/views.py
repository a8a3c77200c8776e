"""Pages of the CMS: home (topics) and sign-up. Thin: parse, call, render."""

from django.contrib import messages
from django.contrib.auth import login
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme

from cms_site.errors import InvalidInput, NotFound
from cms_site.forms import SignupForm
from cms_site.models import Topic
from cms_site.paging import Page, parse_page_request


def home(request):
    try:
        req = parse_page_request(request.GET, default_size=10, max_size=100)
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return redirect("home")
    topics = Topic.objects.select_related("author")
    page = Page(items=[], count=topics.count(), page=req.page, page_size=req.page_size)
    if req.page > page.num_pages:
        raise_404(f"There is no page {req.page}.")
    page.items = list(topics[req.skip : req.skip + req.page_size])
    return render(request, "cms_site/home.html", {"page": page})


def signup(request):
    if request.user.is_authenticated:
        return redirect("home")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.username}!")
        return redirect(safe_next(request, request.GET.get("next") or request.POST.get("next"), fallback="home"))
    return render(request, "registration/signup.html", {"form": form})


def safe_next(request, target, *, fallback: str):
    """`target` when it is a path or URL on this site (no other host, no `//host`, no
    `javascript:`), else `fallback`: the one check for every `next` parameter."""
    if isinstance(target, str) and target and url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return fallback


def raise_404(message: str):
    from django.http import Http404

    raise Http404(message)


def not_found_to_404(exc: NotFound):
    raise_404(exc.message)
