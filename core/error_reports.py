"""Error reports (the DEBUG page, error e-mails, logged tracebacks) never show a secret.

Django's `SafeExceptionReporterFilter` hides settings by NAME (KEY, SECRET, PASS, ...),
so `MONGODB_URI = "mongodb://app:hunter2@db/"`, `DATABASE_URL` and a Redis broker URL
were printed in full. Here every string shown in a report is also cleansed by VALUE:
- the password of any URI with credentials (`scheme://user:PASSWORD@host`) is masked,
  and so is the value of every query parameter whose NAME is sensitive by Django's own
  rule for settings (`SafeExceptionReporterFilter.hidden_settings`: API, AUTH, TOKEN, KEY,
  SECRET, PASS, SIGNATURE), so `?password=`, `token=`, `api_key=`, `signature=`,
  `tlsCertificateKeyFilePassword=`;
- this covers settings (nested dicts such as DATABASES too), request.META (which holds
  the process environment under runserver, and QUERY_STRING), cookies, frame variables
  (by their repr, and a QueryDict such as request.GET by its keys) and the exception's
  message itself;
- the request's own query string: the GET table of the report (page and mail) and its
  "Request URL" show a sensitive parameter's value masked (Django masks POST parameters
  only when a view names them with `sensitive_post_parameters`, and GET never).
Masking is on whatever DEBUG says: a debug page is still a page someone can see.
"""

from __future__ import annotations

import re
from pprint import pformat
from urllib.parse import unquote_plus

from django.utils.datastructures import MultiValueDict
from django.views.debug import ExceptionReporter, SafeExceptionReporterFilter

MASK = "********"
_URI_PASSWORD = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^:@/\s'\"]*:)(?P<secret>[^@/\s'\"]+)(?=@)")
# A query parameter inside any text (a URI, a query string, a repr): its name after `?`, `&`, `;`
# or at the start, then its value; masked when the name is sensitive (`sensitive_name`) once decoded
# as the view reads it (`?t%6Fken=` is request.GET's `token`).
_QUERY_PARAMETER = re.compile(r"(?P<head>(?:^|(?<=[?&;]))(?P<name>[^=&;?#\s'\"/]+)=)(?P<value>[^&;#\s'\"]*)")


def sensitive_name(name: str) -> bool:
    """Django's own rule for a secret setting's name (`hidden_settings`: API, AUTH, TOKEN, KEY, SECRET,
    PASS, SIGNATURE), applied to a query parameter's name too."""
    return bool(SafeExceptionReporterFilter.hidden_settings.search(name))


def mask_secrets(text: str) -> str:
    """`text` with URI passwords and the values of sensitive query parameters replaced by a mask."""
    text = _URI_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
    return _QUERY_PARAMETER.sub(
        lambda m: m.group("head") + MASK if m.group("value") and sensitive_name(unquote_plus(m.group("name")))
        else m.group(0), text)


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

    def cleanse_query(self, query: MultiValueDict) -> MultiValueDict:
        """A copy of a QueryDict (request.GET) with the values of sensitive names masked."""
        cleansed = query.copy()
        for name in list(cleansed):
            if sensitive_name(name):
                cleansed.setlist(name, [self.cleansed_substitute for _ in cleansed.getlist(name)])
        return cleansed

    def get_safe_query_items(self, request):
        """request.GET for the report's GET table: a sensitive name's values masked."""
        if request is None or not hasattr(request, "GET"):
            return []
        return self.cleanse_query(request.GET).items()

    def cleanse_special_types(self, request, value):
        value = super().cleanse_special_types(request, value)
        if isinstance(value, MultiValueDict):  # a QueryDict in a frame: request.GET, or a copy of it
            value = self.cleanse_query(value)
        return value

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
    """Masks the exception message too (an invalid-URI error quotes the URI), and the request's
    query string where the report shows it: the GET table and the request's URL."""

    def get_traceback_data(self):
        data = super().get_traceback_data()
        if "exception_value" in data:
            data["exception_value"] = mask_secrets(data["exception_value"])
        if "request_GET_items" in data:
            data["request_GET_items"] = self.filter.get_safe_query_items(self.request)
        if "request_insecure_uri" in data:
            data["request_insecure_uri"] = mask_secrets(data["request_insecure_uri"])
        return data
