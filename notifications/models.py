"""Per-user notification e-mail preferences (a row appears the first time they are saved)."""

from django.conf import settings
from django.db import models

KINDS = ("reply", "mention", "like", "follow", "comment")
EMAIL_DEFAULTS = {"reply": True, "mention": True, "like": False, "follow": False, "comment": True}


class NotificationPreference(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preference")
    email_reply = models.BooleanField("e-mail me replies to my comments", default=EMAIL_DEFAULTS["reply"])
    email_mention = models.BooleanField("e-mail me when I am @mentioned", default=EMAIL_DEFAULTS["mention"])
    email_like = models.BooleanField("e-mail me likes of my comments", default=EMAIL_DEFAULTS["like"])
    email_follow = models.BooleanField("e-mail me new followers", default=EMAIL_DEFAULTS["follow"])
    email_comment = models.BooleanField("e-mail me new comments in discussions I follow", default=EMAIL_DEFAULTS["comment"])
    # Signed into every unsubscribe link; moved on when the user turns an e-mail kind back on,
    # so links sent before no longer unsubscribe them.
    unsubscribe_version = models.PositiveIntegerField(default=0, editable=False)

    def __str__(self):
        return f"e-mail preferences of {self.user}"

    def wants(self, kind: str) -> bool:
        return bool(getattr(self, f"email_{kind}", False))
