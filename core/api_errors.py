"""The API's error body: always JSON with a `detail` message.

    {"detail": "text must not be empty.", "code": "invalid", "errors": {"text": ["..."]}}

`errors` is present for field validation errors, always `{field: [messages]}` (an error
inside a list or a nested object gets a dotted key: `tags.0`). Domain errors from services
(`core.errors`) get their own status code (400, 401, 403, 404, 409, 410).

- 401 (no or bad credentials) always carries `WWW-Authenticate: Token`; 403 means the
  caller is known but may not do this.
- 429 `{"detail", "code": "throttled"}` with `Retry-After` (core/throttling.py).
- A body over `DATA_UPLOAD_MAX_MEMORY_SIZE` (or with too many fields) is a JSON 400
  `code: "too_large"` here, not Django's HTML 400 page.
"""

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.errors import ServiceError


def _first_message(data) -> str:
    if isinstance(data, dict):
        for key, value in data.items():
            message = _first_message(value)
            if message:
                return message if key == "non_field_errors" else f"{key}: {message}"
    if isinstance(data, list):
        for value in data:
            message = _first_message(value)
            if message:
                return message
    if isinstance(data, str):
        return data
    return ""


def _flat_errors(data, prefix: str = "") -> dict[str, list[str]]:
    """`{field: [messages]}` always: nested errors (a list item, a nested object) get dotted keys, `tags.0`."""
    flat: dict[str, list[str]] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            flat.update(_flat_errors(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(data, list) and all(isinstance(v, str) for v in data):
        flat[prefix or "non_field_errors"] = [str(v) for v in data]
    elif isinstance(data, list):
        for index, value in enumerate(data):
            if value:
                flat.update(_flat_errors(value, f"{prefix}.{index}" if prefix else str(index)))
    else:
        flat[prefix or "non_field_errors"] = [str(data)]
    return flat


WWW_AUTHENTICATE = 'Token realm="api"'


def _with_auth_header(response):
    if response is not None and response.status_code == status.HTTP_401_UNAUTHORIZED:
        response["WWW-Authenticate"] = response.get("WWW-Authenticate") or WWW_AUTHENTICATE
    return response


def exception_handler(exc, context):
    return _with_auth_header(_handle(exc, context))


def _handle(exc, context):
    if isinstance(exc, ServiceError):
        body = {"detail": exc.message, "code": exc.code}
        if exc.field:
            body["errors"] = {exc.field: [exc.message]}
        response = Response(body, status=exc.status_code)
        if getattr(exc, "retry_after", None):
            response["Retry-After"] = str(exc.retry_after)
        return response
    if isinstance(exc, RequestDataTooBig | TooManyFieldsSent):
        return Response({"detail": "The request body is too large.", "code": "too_large"},
                        status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, SuspiciousOperation):
        return Response({"detail": "Bad request.", "code": "bad_request"}, status=status.HTTP_400_BAD_REQUEST)

    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        errors = _flat_errors(response.data if isinstance(response.data, dict) else {"non_field_errors": response.data})
        response.data = {"detail": _first_message(errors) or "Invalid input.", "code": "invalid", "errors": errors}
        response.status_code = status.HTTP_400_BAD_REQUEST
    elif isinstance(exc, exceptions.Throttled):
        # DRF sets Retry-After to exc.wait (whole seconds, rounded up): the body says the same number.
        wait = exc.wait
        response.data = {"detail": f"Too many requests: try again in {int(wait)} seconds."
                         if wait is not None else "Too many requests.", "code": "throttled"}
    elif isinstance(response.data, dict) and "detail" in response.data:
        response.data = {"detail": str(response.data["detail"]), "code": getattr(exc, "default_code", "error")}
    return response
