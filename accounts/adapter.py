"""django-allauth's hooks: the site's username rules for every sign-up door.

allauth's sign-up page, its social sign-up (a GitHub or Google log-in that creates an
account, whose suggested usernames are tried with `shallow=True`) and the register API
share accounts/usernames.py: NFKC, letters of one script, unique ignoring case and
look-alike letters.
"""

from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from django import forms

from accounts.usernames import username_clean, username_unavailable
from core.errors import InvalidInput


class AccountAdapter(DefaultAccountAdapter):
    def clean_username(self, username, shallow=False):
        try:
            name = username_clean(username)
        except InvalidInput as exc:
            raise forms.ValidationError(exc.message, code="invalid") from None
        if not shallow and (refusal := username_unavailable(name)):
            raise forms.ValidationError(refusal, code="unique")
        return name

    def send_mail(self, template_prefix, email, context):
        """Account e-mails (confirmation, password reset): allauth renders the message here, in
        the request (its links need the request's site), and a retried task sends it
        (`accounts.services.account_email_queue`): a mail server that refuses or times out
        delays the e-mail, never fails the request."""
        from allauth.core import context as allauth_context
        from django.contrib.sites.shortcuts import get_current_site

        from accounts.services import account_email_queue

        request = allauth_context.request
        ctx = {"request": request, "email": email, "current_site": get_current_site(request), **context}
        account_email_queue(message=self.render_mail(template_prefix, email, ctx))


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    """A GitHub or Google log-in that creates an account proposes the provider's username;
    one that breaks the site's rules or is taken is dropped, and allauth derives a free
    one (each candidate through `AccountAdapter.clean_username`)."""

    def populate_user(self, request, sociallogin, data):
        user = super().populate_user(request, sociallogin, data)
        try:
            name = username_clean(user.username or "")
            user.username = "" if username_unavailable(name) else name
        except InvalidInput:
            user.username = ""
        return user
