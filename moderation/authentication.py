"""DRF's token authentication (`rest_framework.authentication.TokenAuthentication`, the API's
first authentication class), with the user's moderation row read in the same query.

DRF reads the token and its user in one query (`select_related("user")`); every write through
the API then reads the author's ban and pre-moderation (`moderation.services.restriction_of`:
the write check and the submission gate). Here that row joins the token's query
(`select_related` of the reverse one-to-one `moderation`, a LEFT OUTER JOIN on its primary key),
so a write reads no ban of its own; a read (a safe method) joins nothing. Read per request, as
the token is: a ban or a revoked token takes effect at the next request, as before.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.permissions import SAFE_METHODS

# Set on the user this authentication loaded: its `moderation` is the row read with its token, in
# this request. A user object from anywhere else (a session, a shell, a test) may carry a
# `moderation` read long before, which `restriction_of` reads again.
LOADED_WITH_TOKEN = "moderation_loaded_with_token"


class TokenAuthentication(authentication.TokenAuthentication):
    writes = True  # DRF makes one authenticator per request: `authenticate` says what this one is

    def authenticate(self, request):
        """A read (GET, HEAD, OPTIONS: no write check runs) joins nothing more than DRF does."""
        self.writes = request.method not in SAFE_METHODS
        return super().authenticate(request)

    def authenticate_credentials(self, key):
        """DRF's `authenticate_credentials` (the same answers and errors), with the moderation row."""
        model = self.get_model()
        try:
            token = model.objects.select_related("user", *(("user__moderation",) if self.writes else ())).get(key=key)
        except model.DoesNotExist:
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        if self.writes:
            setattr(token.user, LOADED_WITH_TOKEN, True)
        return token.user, token
