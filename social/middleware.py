"""Last seen, for hybrid fan-out: a signed-in request records its user as active today.

Runs after the view, so API requests authenticated by token count too (DRF sets the user
on the Django request). At most one MongoDB write per user and day (`presence_touch`).
A failure to record presence never fails the request.
"""

import logging

from social.services import presence_touch

log = logging.getLogger(__name__)


class PresenceMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        user = getattr(request, "user", None)
        # 503: MongoDB is unreachable (core/serving.py); do not wait for it a second time.
        # A user deleted by this request has no primary key any more: nothing to record.
        if user is not None and user.is_authenticated and user.pk is not None and response.status_code != 503:
            try:
                presence_touch(user_id=user.pk)
            except Exception:  # presence is best effort
                log.exception("could not record presence of user %s", user.pk)
        return response
