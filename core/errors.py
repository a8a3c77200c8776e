"""Domain errors raised by services, mapped to HTTP by the API and the pages.

Services raise these; the API's exception handler turns them into JSON with the
matching status, and page views into a message or a 404. Nothing else should raise
DRF or Http exceptions for business rules. A message says what is wrong ("Comments are
closed on this topic."); what was not done ("Not posted:", "Not saved:") is the page's to say.
"""


class ServiceError(Exception):
    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidInput(ServiceError):
    status_code = 400
    code = "invalid"


class NotAuthenticated(ServiceError):
    status_code = 401
    code = "not_authenticated"


class Forbidden(ServiceError):
    status_code = 403
    code = "forbidden"


class NotFound(ServiceError):
    status_code = 404
    code = "not_found"


class Gone(ServiceError):
    """What was asked for existed and was deleted for good (a deleted comment's earlier versions)."""

    status_code = 410
    code = "gone"


class Conflict(ServiceError):
    status_code = 409
    code = "conflict"
