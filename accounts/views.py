"""Account pages: sign-up. Thin: parse, call, render."""

from django.contrib import messages
from django.contrib.auth import login
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme

from accounts.forms import SignupForm


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

