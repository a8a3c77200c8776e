"""Error reports (the DEBUG page, error e-mails, logged tracebacks) never show a secret.

Django's `SafeExceptionReporterFilter` hides settings by NAME (KEY, SECRET, PASS, ...),
so `MONGODB_URI = "mongodb://app:hunter2@db/"`, `DATABASE_URL` and a Redis broker URL
were printed in full. Here every string shown in a report is also cleansed by VALUE:
- the password of any URI with credentials (`scheme://user:PASSWORD@host`) is masked,
  and so is the value of a secret-looking query parameter (`?password=`, `token=`,
  `secret=`, `key=`, `tlsCertificateKeyFilePassword=`);
- this covers settings (nested dicts such as DATABASES too), request.META (which holds
  the process environment under runserver), cookies, frame variables (by their repr)
  and the exception's message itself.
Masking is on whatever DEBUG says: a debug page is still a page someone can see.
"""

from __future__ import annotations

import re
from pprint import pformat

from django.views.debug import ExceptionReporter, SafeExceptionReporterFilter

MASK = "********"
_URI_PASSWORD = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^:@/\s'\"]*:)(?P<secret>[^@/\s'\"]+)(?=@)")
_QUERY_SECRET = re.compile(r"(?P<head>[?&;](?:[\w.-]*(?:password|passwd|secret|token|key|apikey))=)(?P<secret>[^&;#\s'\"]+)",
                           re.IGNORECASE)


def mask_secrets(text: str) -> str:
    """`text` with URI passwords and secret query values replaced by a mask."""
    text = _URI_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
    return _QUERY_SECRET.sub(lambda m: m.group("head") + MASK, text)


class _MaskedRepr:
    """Stands in for a frame variable whose repr held a secret; the report prints its repr."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


class SecretMaskingReporterFilter(SafeExceptionReporterFilter):
    def cleanse_setting(self, key, value):
        cleansed = super().cleanse_setting(key, value)
        return mask_secrets(cleansed) if isinstance(cleansed, str) else cleansed

    def get_traceback_frame_variables(self, request, tb_frame):
        variables = []
        for name, value in super().get_traceback_frame_variables(request, tb_frame):
            if isinstance(value, str):
                value = mask_secrets(value)
            else:
                try:
                    shown = pformat(value)
                except Exception:  # the report prints its own message for an unprintable value
                    shown = None
                if shown is not None and mask_secrets(shown) != shown:
                    value = _MaskedRepr(mask_secrets(shown))
            variables.append((name, value))
        return variables


class SecretMaskingExceptionReporter(ExceptionReporter):
    """Masks the exception message too (an invalid-URI error quotes the URI)."""

    def get_traceback_data(self):
        data = super().get_traceback_data()
        if "exception_value" in data:
            data["exception_value"] = mask_secrets(data["exception_value"])
        return data
