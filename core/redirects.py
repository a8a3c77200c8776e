"""The one check for every `next` parameter: a redirect stays on this site."""

from django.utils.http import url_has_allowed_host_and_scheme


def safe_next(request, target, *, fallback: str):
    """`target` when it is a path or URL on this site (no other host, no `//host`, no
    `javascript:`), else `fallback`: the one check for every `next` parameter."""
    if isinstance(target, str) and target and url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return fallback



def posted_next(request, fallback: str):
    """The form's posted `next` when it is safe (`safe_next`), else `fallback`."""
    return safe_next(request, request.POST.get("next"), fallback=fallback)
