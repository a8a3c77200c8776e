"""The authentication backend for a log-in by username or e-mail address (allauth's, for every caller).

allauth's backend reads a name with "@" as an address and checks the password of every account
holding it (its log-in page, the admin's and the token API all reach it through Django's
`authenticate`): one hash per holder, so the time told whether other accounts held an address.
Here an address names its owner only (`accounts.selectors.login_name`), so each attempt costs
one hash in this backend, known or not (allauth hashes a dummy password for an unknown name,
as Django's ModelBackend does).
"""

from __future__ import annotations

from allauth.account.auth_backends import AuthenticationBackend as AllauthAuthenticationBackend

from accounts.selectors import login_name


class AuthenticationBackend(AllauthAuthenticationBackend):
    def authenticate(self, request, **credentials):
        login = credentials.get("email") or credentials.get("username")
        if login:
            credentials = {"username": login_name(login), "password": credentials.get("password")}
        return super().authenticate(request, **credentials)
