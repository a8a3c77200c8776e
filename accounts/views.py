"""Account pages of our own: the account page (log-in, sign-up, password and e-mail are
allauth's, under accounts/urls.py). Thin: parse, call, render."""

from allauth.socialaccount.adapter import get_adapter as get_social_adapter
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render

from accounts import selectors, services
from accounts.forms import DeleteAccountForm
from core.errors import ServiceError


@login_required
def account(request):
    return render(request, "account/account.html", {
        "me": selectors.me(user=request.user),
        "providers": get_social_adapter().list_providers(request),
    })


@login_required
def account_delete(request):
    form = DeleteAccountForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = request.user
        try:
            services.account_delete(user=user, password=form.cleaned_data["password"],
                                    comments=form.cleaned_data["comments"])
        except ServiceError as exc:
            form.add_error(getattr(exc, "field", None) if getattr(exc, "field", None) in form.fields else None,
                           exc.message)
        else:
            logout(request)
            messages.success(request, "Your account was deleted. Goodbye.")
            return redirect("home")
    return render(request, "account/delete.html", {"form": form}, status=400 if form.errors else 200)
