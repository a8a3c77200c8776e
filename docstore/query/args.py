"""Command arguments a server does not know.

pymongo sends a command method's extra keyword arguments in the command as they are, so an
argument neither pymongo nor the server's command reads reaches the server, whose command parser
(the IDL's) refuses the unknown field: code 40415, "BSON field '<command>.<field>' is an unknown
field." That holds for MongoDB 8.2's `rawData` too, which pymongo 4.20 does not implement
(DRIVERS-3064) and a 7.0 server (the version the engine reports) does not know.
"""

from __future__ import annotations

from pymongo.errors import OperationFailure


def unknown(kwargs: dict, known: frozenset) -> dict:
    """The keyword arguments a method does not read: they go in the published command as they are,
    and `refuse_unknown` answers as the server does."""
    return {k: v for k, v in kwargs.items() if k not in known} if kwargs else {}


def refuse_unknown(command: str, unknown: dict) -> None:
    """A server's answer to a field of `command` it does not know (its IDL parser: code 40415);
    `command` may be a path (`update.updates`)."""
    if unknown:
        msg = f"BSON field '{command}.{next(iter(unknown))}' is an unknown field."
        raise OperationFailure(msg, 40415, {"ok": 0.0, "errmsg": msg, "code": 40415, "codeName": "Location40415"})
