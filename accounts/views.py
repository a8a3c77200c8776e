"""Account pages of our own: the account page (log-in, sign-up, password and e-mail are
allauth's, under accounts/urls.py). Thin: parse, call, render."""

from allauth.socialaccount.adapter import get_adapter as get_social_adapter
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from accounts import selectors


@login_required
def account(request):
    return render(request, "account/account.html", {
        "me": selectors.me(user=request.user),
        "providers": get_social_adapter().list_providers(request),
    })
