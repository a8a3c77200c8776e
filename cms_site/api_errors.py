"""The API's error body: always JSON with a `detail` message.

    {"detail": "text must not be empty.", "code": "invalid", "errors": {"text": ["..."]}}

`errors` is present for field validation errors. Domain errors from services
(`cms_site.errors`) get their own status code (400, 401, 403, 404, 409).
"""

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from cms_site.errors import ServiceError


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


def exception_handler(exc, context):
    if isinstance(exc, ServiceError):
        body = {"detail": exc.message, "code": exc.code}
        if exc.field:
            body["errors"] = {exc.field: [exc.message]}
        return Response(body, status=exc.status_code)

    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        errors = response.data if isinstance(response.data, dict) else {"non_field_errors": response.data}
        response.data = {"detail": _first_message(errors) or "Invalid input.", "code": "invalid", "errors": errors}
        response.status_code = status.HTTP_400_BAD_REQUEST
    elif isinstance(response.data, dict) and "detail" in response.data:
        response.data = {"detail": str(response.data["detail"]), "code": getattr(exc, "default_code", "error")}
    return response
