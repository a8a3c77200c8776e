"""OpenAPI post-processing: every operation documents the errors it can answer.

Views document their own success and domain errors (`extend_schema(responses=...)`); this
drf-spectacular hook adds the ones that come from the framework around every view, so
that no operation documents only its success and an endpoint added later is covered too:

- 400 `invalid`/`parse_error`/`too_large`: any operation with a body or query parameters;
- 401 `not_authenticated` (with `WWW-Authenticate: Token`): every operation, since an
  invalid token is refused before any view runs; for writes it is the anonymous answer;
- 403 `forbidden`/`permission_denied`: every write (not an editor, a ban, a failed CSRF
  check of a session);
- 404 `not_found`: every operation with a path parameter;
- 415 `unsupported_media_type`: every operation with a body (JSON, form or multipart only);
- 429 `throttled` (with `Retry-After`): every write (core/throttling.py).
A response a view already documents is kept as it is. Every error body is the `Error`
component: `{"detail", "code", "errors"?}`.
"""

from __future__ import annotations

UNSAFE = {"post", "put", "patch", "delete"}
ERROR_COMPONENT = {
    "type": "object",
    "required": ["detail"],
    "properties": {
        "detail": {"type": "string", "description": "What is wrong, for people."},
        "code": {"type": "string", "description": "A stable machine-readable code: invalid, parse_error, too_large, "
                                                  "not_authenticated, forbidden, permission_denied, not_found, "
                                                  "conflict, throttled, spam, ..."},
        "errors": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}},
                   "description": "Field name -> messages, for invalid input."},
    },
}
DESCRIPTIONS = {
    "400": "Bad input: `detail` says what is wrong, `errors` which field.",
    "401": "No or invalid credentials (`WWW-Authenticate: Token`).",
    "403": "Authenticated, but not allowed to do this.",
    "404": "No such object (or page).",
    "415": "The body's media type is not JSON, form or multipart.",
    "429": "Too many requests: wait `Retry-After` seconds.",
}
HEADERS = {
    "401": {"WWW-Authenticate": {"schema": {"type": "string"}, "description": "`Token`"}},
    "429": {"Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait."}},
}


def _error_response(status: str) -> dict:
    response = {"description": DESCRIPTIONS[status],
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    if status in HEADERS:
        response["headers"] = HEADERS[status]
    return response


def document_error_responses(result, generator, request, public):
    result.setdefault("components", {}).setdefault("schemas", {}).setdefault("Error", ERROR_COMPONENT)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in UNSAFE | {"get", "head", "options"}:
                continue
            parameters = operation.get("parameters", [])
            wanted = ["401"]
            if operation.get("requestBody") or any(p.get("in") == "query" for p in parameters):
                wanted.append("400")
            if operation.get("requestBody"):
                wanted.append("415")
            if "{" in path:
                wanted.append("404")
            if method in UNSAFE:
                wanted += ["400", "403", "429"]
            responses = operation.setdefault("responses", {})
            for status in wanted:
                responses.setdefault(status, _error_response(status))
    return result
