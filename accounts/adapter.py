"""django-allauth's hooks: the site's username rules for every sign-up door, and an e-mail
address that belongs to one account.

allauth's sign-up page, its social sign-up (a GitHub or Google log-in that creates an
account, whose suggested usernames are tried with `shallow=True`) and the register API
share accounts/usernames.py: NFKC, letters of one script, unique ignoring case and
look-alike letters.

An address belongs to one account, its owner (`accounts.selectors.email_owner`). allauth's
strict enumeration prevention (ACCOUNT_PREVENT_ENUMERATION = "strict") lets a sign-up or an
added address that another account has go through and answers exactly as for a free one, so
nobody learns that the address is in use; the hooks below keep the address its owner's: its
confirmation link is sent only for the owner (anyone else's request mails the owner allauth's
"account already exists" notice instead), a confirmation by anyone else is refused; a
log-in by the address names the owner only (accounts/backends.py).

allauth's mails name the site and link to it through the request's host (Django's
`RequestSite`: django.contrib.sites is not installed), so a mail said "Hello from
127.0.0.1:8400!" and linked to whatever host the request named. They now say and link to
the site's configured public address, `SITE_URL`, the one the notification e-mails and
exports use (`configured_site`).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from allauth.account.adapter import DefaultAccountAdapter
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from django import forms
from django.conf import settings
from django.contrib import messages
from django.urls import reverse

from accounts.emails import email_clean
from accounts.selectors import email_owner
from accounts.usernames import username_clean, username_unavailable
from core.errors import InvalidInput


@dataclass(frozen=True)
class ConfiguredSite:
    """The site as allauth's mail templates read it (`current_site.name`, `.domain`), from SITE_URL."""

    domain: str
    name: str


def configured_site() -> ConfiguredSite:
    host = urlsplit(settings.SITE_URL).netloc or settings.SITE_URL
    return ConfiguredSite(domain=host, name=host)


def site_url(url: str) -> str:
    """`url` (a path, or an absolute URL built from the request's host) at SITE_URL."""
    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    return settings.SITE_URL.rstrip("/") + path


class AccountAdapter(DefaultAccountAdapter):
    def render_mail(self, template_prefix, email, context, headers=None):
        # Every allauth mail is rendered here: `current_site` is the configured site, not the request's host.
        return super().render_mail(template_prefix, email, {**context, "current_site": configured_site()}, headers)

    def get_email_confirmation_url(self, request, emailconfirmation):
        return site_url(super().get_email_confirmation_url(request, emailconfirmation))

    def get_reset_password_from_key_url(self, key):
        return site_url(super().get_reset_password_from_key_url(key))

    def send_account_already_exists_mail(self, email):
        """allauth's notice to an address's owner, its links at SITE_URL."""
        self.send_mail("account/email/account_already_exists", email, {
            "signup_url": site_url(reverse("account_signup")),
            "password_reset_url": site_url(reverse("account_reset_password"))})

    def clean_email(self, email):
        # allauth's sign-up, e-mail and reset forms pass every address through here: one spelling of it.
        return email_clean(super().clean_email(email))

    def clean_username(self, username, shallow=False):
        try:
            name = username_clean(username)
        except InvalidInput as exc:
            raise forms.ValidationError(exc.message, code="invalid") from None
        if not shallow and (refusal := username_unavailable(name)):
            raise forms.ValidationError(refusal, code="unique")
        return name

    def send_confirmation_mail(self, request, emailconfirmation, signup):
        """The link that confirms an address goes out only for its owner. For another account
        (a sign-up, the e-mail page or a re-send naming someone else's address) the owner gets
        allauth's "account already exists" mail, and the page says what it says for a free
        address ("Confirmation e-mail sent"): allauth's enumeration prevention pattern."""
        address = emailconfirmation.email_address
        owner = email_owner(address.email)
        if owner is not None and owner.pk != address.user_id:
            self.send_account_already_exists_mail(address.email)
            return
        super().send_confirmation_mail(request, emailconfirmation, signup)

    def confirm_email(self, request, email_address):
        """Only the owner confirms an address (a link sent before another account owned it, or
        to an account that is not the owner, confirms nothing): allauth's "could not be
        confirmed" message, as for an address another account verified."""
        owner = email_owner(email_address.email)
        if owner is not None and owner.pk != email_address.user_id:
            self.add_message(request, messages.ERROR, "account/messages/email_confirmation_failed.txt",
                             {"email": email_address.email})
            return False
        return super().confirm_email(request, email_address)

    def authenticate(self, request, **credentials):
        """The log-in page passes an address as `email`; here it goes as `username`, as the admin and
        the token API pass it, so every log-in costs the same hashing: Django's ModelBackend hashes
        once for any `username` (a dummy password for an unknown one) and none for `email`, and
        accounts/backends.py checks one account (an address names its owner only)."""
        login = credentials.get("email") or credentials.get("username")
        if login:
            credentials = {"username": login, "password": credentials.get("password")}
        return super().authenticate(request, **credentials)

    def send_mail(self, template_prefix, email, context):
        """Account e-mails (confirmation, password reset, the already-exists notice): allauth
        renders the message here, in the request (render_mail names the configured site), and a
        retried task sends it (`accounts.services.account_email_queue`): a mail server that
        refuses or times out delays the e-mail, never fails the request."""
        from allauth.core import context as allauth_context

        from accounts.services import account_email_queue

        ctx = {"request": allauth_context.request, "email": email, **context}
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
