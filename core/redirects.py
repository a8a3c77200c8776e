"""The one check for every `next` parameter: a redirect stays on this site."""

from urllib.parse import urlsplit

from django.utils.http import url_has_allowed_host_and_scheme


def safe_next(request, target, *, fallback: str):
    """`target` when it is a path or URL on this site (no other host, no `//host`, no
    `javascript:`), else `fallback`: the one check for every `next` parameter.

    Only a path from the site's root ("/...") or an http(s) URL of this host is kept: Django's
    `redirect()` reads any other word ("bogus", "٣") as the name of a URL pattern and fails
    with NoReverseMatch after the form's write was already done."""
    if not isinstance(target, str) or not target:
        return fallback
    if not target.startswith("/") and urlsplit(target).scheme not in ("http", "https"):
        return fallback
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return fallback


def posted_next(request, fallback: str):
    """The form's posted `next` when it is safe (`safe_next`), else `fallback`."""
    return safe_next(request, request.POST.get("next"), fallback=fallback)
