"""Read concern: what a single node (a standalone mongod, as the engine reports itself) serves.

MongoDB manual, "Read Concern", and the server's own parser and wait (read_concern_args.cpp,
read_concern_mongod.cpp):

- `local` and `available` read the latest committed data; `majority` reads what a majority of
  the set acknowledged, which on one node is every acknowledged write (the engine commits each
  write before it returns): the three are served, each read as it always is.
- `linearizable` needs a replica set: "node needs to be a replica set member to use read
  concern" (code 123 NotAReplicaSet).
- `snapshot` needs a replica set too (outside a transaction as inside one): "node needs to be a
  replica set member to use readConcern: snapshot" (code 123).
- any other level fails to parse (code 9 FailedToParse), before the command reads anything.

Over the wire (`docstore serve`) the engine is a replica set of one member, always primary, so
`check_sent` applies a primary's rules to the `readConcern` a driver sends: `linearizable` is
served too (the one member is the primary and every acknowledged write is committed), `snapshot`
is refused with code 238 NotImplemented (a snapshot read's reply names the cluster time it read
at, `atClusterTime`, which the engine does not keep), `afterClusterTime` is satisfied (the member
has applied every write it acknowledged), and the parser's errors are the server's.

A driver sends the read concern in the commands that read: `find` (not its `getMore`s),
`aggregate` (with `$out`/`$merge` too, since MongoDB 4.4), `count` and `distinct`
(pymongo.message._gen_find_command, pymongo's aggregation and command helpers); the default
(no level) sends nothing and the server reads at `local`.
"""

from __future__ import annotations

from bson import Timestamp
from pymongo.errors import ConfigurationError, OperationFailure
from pymongo.read_concern import DEFAULT_READ_CONCERN, ReadConcern
from pymongo.write_concern import WriteConcern

DEFAULT = DEFAULT_READ_CONCERN
SERVED = frozenset({"local", "available", "majority"})
LEVELS = ("local", "majority", "linearizable", "available", "snapshot")


def of(read_concern, default: ReadConcern = DEFAULT) -> ReadConcern:
    """The read concern a `get_database`/`get_collection`/`with_options` argument gives: `None` keeps
    `default` (pymongo's rule: the parent's), anything but a ReadConcern is pymongo's TypeError."""
    return _given(read_concern, default, ReadConcern, "read_concern", "pymongo.read_concern.ReadConcern")


def sent(read_concern: ReadConcern) -> dict | None:
    """The `readConcern` field a driver adds to a read command: none without a level."""
    return read_concern.document if read_concern.level else None


def check(read_concern: ReadConcern, command: dict | None = None) -> None:
    """Raise the server's error for a level a single node does not serve, or `command` (the
    command document a driver sends) does not support; nothing for the others."""
    level = read_concern.level
    if not level or level in SERVED:
        return
    if level not in LEVELS:
        _fail(9, "readConcern.level must be either 'local', 'majority', 'linearizable', 'available', or 'snapshot'")
    supported(level, command)
    if level == "linearizable":
        _fail(123, "node needs to be a replica set member to use read concern")
    if level == "snapshot":
        _fail(123, "node needs to be a replica set member to use readConcern: snapshot")
    _fail(9, "readConcern.level must be either 'local', 'majority', 'linearizable', 'available', or 'snapshot'")


def supported(level: str, command: dict | None) -> None:
    """The server checks whether the command supports the read concern before it looks at the
    topology (service_entry_point_common.cpp: the command's `supportsReadConcern`), so these fail
    on any node: an aggregation that writes (`$out`, `$merge`) cannot read `linearizable`
    (document_source_writer.h), and `count` does not read at a `snapshot` (count_cmd.cpp)."""
    if not command:
        return
    name = next(iter(command))
    if name == "aggregate" and level == "linearizable":
        for stage in command.get("pipeline") or ():
            stage_name = next(iter(stage), None) if isinstance(stage, dict) else None
            if stage_name in ("$out", "$merge"):
                _fail(72, f"{stage_name} cannot be used with a 'linearizable' read concern level")
    if name == "count" and level == "snapshot":
        _fail(72, "Command count does not support { readConcern: { level: \"snapshot\" } } :: caused by :: "
                  "read concern snapshot not supported")


_FIELDS = frozenset({"level", "afterClusterTime", "afterOpTime", "atClusterTime", "allowTransactionTableSnapshot",
                     "provenance"})


def check_sent(document, command: dict | None = None) -> None:
    """The `readConcern` of `command`, received over the wire, by a replica set primary's rules."""
    if not isinstance(document, dict):
        _fail(9, "readConcern field should be an object")
    # read_concern_args.cpp: each field in order (a wrong type is 14 TypeMismatch, from its
    # bsonExtract*Field), then the rules between them (72 InvalidOptions).
    for field, value in document.items():
        if field not in _FIELDS:
            _fail(72, f"Unrecognized option in readConcern: {field}")
        if field == "level":
            if not isinstance(value, str):
                _fail(14, f'"level" had the wrong type. Expected string, found {_type_name(value)}')
            if value not in LEVELS:
                _fail(9, "readConcern.level must be either 'local', 'majority', 'linearizable', 'available', or "
                         "'snapshot'")
        if field == "afterClusterTime" and not isinstance(value, Timestamp):
            _fail(14, f'"afterClusterTime" had the wrong type. Expected timestamp, found {_type_name(value)}')
    level = document.get("level")
    if "afterClusterTime" in document and "afterOpTime" in document:
        _fail(72, "Can not specify both afterClusterTime and afterOpTime")
    if "afterClusterTime" in document and level not in (None, "local", "majority", "snapshot"):
        _fail(72, "afterClusterTime field can be set only if level is equal to majority, local, or snapshot")
    if "atClusterTime" in document and level != "snapshot":
        _fail(72, "atClusterTime field can be set only if level is equal to snapshot")
    if level is not None:
        supported(level, command)
    if level == "snapshot":
        _fail(238, "readConcern level snapshot is not implemented by the embedded engine")


# --- write concern ----------------------------------------------------------------------------------
#
# MongoDB manual, "Write Concern", and the server's validateWriteConcern and waitForWriteConcern
# (write_concern.cpp):
#
# - a standalone refuses `w` above 1 ("cannot use 'w' > 1 when a host is not replicated") and any
#   tag set but "majority" ("cannot use non-majority 'w' mode "<tag>" when a host is not a member of
#   a replica set"), both code 2 BadValue, before the command writes anything; `w: "majority"`,
#   `j`, `fsync` and `wtimeout` are served (the engine commits each write before it returns, so
#   there is nothing to wait for and no timeout to reach);
# - `w: 0` is unacknowledged: the driver sends the write with OP_MSG moreToCome and reads no reply,
#   so the write is applied and no server error reaches the caller; pymongo's results report
#   `acknowledged == False` (their counts raise InvalidOperation), and pymongo itself refuses
#   with ConfigurationError, before sending, what an unacknowledged write cannot carry.
#
# Over the wire (`docstore serve`) the engine is a replica set of one member: the write is
# applied and the reply carries a `writeConcernError` when the set cannot satisfy the concern,
# `w` above 1 (100 UnsatisfiableWriteConcern, "Not enough data-bearing nodes") or a tag the set's
# configuration does not name (79 UnknownReplWriteConcern), as the primary's awaitReplication
# answers at once rather than waiting out `wtimeout`.

WRITE_DEFAULT = WriteConcern()


def write_of(write_concern, default: WriteConcern = WRITE_DEFAULT) -> WriteConcern:
    """The write concern a `get_database`/`get_collection`/`with_options` argument gives: `None`
    keeps `default` (the parent's), anything but a WriteConcern is pymongo's TypeError."""
    return _given(write_concern, default, WriteConcern, "write_concern", "pymongo.write_concern.WriteConcern")


def check_write(write_concern: WriteConcern) -> None:
    """Raise a standalone's error for a write concern it cannot satisfy; nothing for the others."""
    w = write_concern.document.get("w")
    if isinstance(w, int) and w > 1:
        _fail(2, "cannot use 'w' > 1 when a host is not replicated")
    if isinstance(w, str) and w != "majority":
        _fail(2, f"cannot use non-majority 'w' mode \"{w}\" when a host is not a member of a replica set")


def check_unacknowledged(session, collation=None, array_filters=None, sort=None, bypass=None) -> None:
    """pymongo's own refusals of an unacknowledged write, nothing sent: an explicit session, a
    collation, arrayFilters, and an update's `sort` below MongoDB 8.0 (the engine reports 7.0)
    (ConfigurationError); and a bulk write's bypass_document_validation (its bulk API raises
    OperationFailure for it)."""
    if session is not None:
        raise ConfigurationError(f"Explicit sessions are incompatible with unacknowledged write concern: "
                                 f"{WriteConcern(w=0)!r}")
    if collation is not None:
        raise ConfigurationError("Collation is unsupported for unacknowledged writes.")
    if array_filters is not None:
        raise ConfigurationError("arrayFilters is unsupported for unacknowledged writes.")
    if sort is not None:
        raise ConfigurationError("Must be connected to MongoDB 8.0+ to use sort on unacknowledged update commands.")
    if bypass:
        raise OperationFailure("Cannot set bypass_document_validation with unacknowledged write concern")


def write_concern_error(document) -> dict | None:
    """The `writeConcernError` a one-member replica set's primary adds to a write's reply for the
    `writeConcern` a driver sent, or None when the one member satisfies it."""
    if not isinstance(document, dict):
        return None
    w = document.get("w")
    if isinstance(w, bool) or not isinstance(w, int | float | str):
        return None
    if isinstance(w, str) and w != "majority":
        code, msg = 79, f"No write concern mode named '{w}' found in replica set configuration"
    elif not isinstance(w, str) and w > 1:
        code, msg = 100, "Not enough data-bearing nodes"
    else:
        return None
    return {"code": code, "codeName": _NAMES[code], "errmsg": msg,
            "errInfo": {"writeConcern": {"wtimeout": 0, **document, "provenance": "clientSupplied"}}}


def _type_name(value) -> str:
    """A value's BSON type as the server's messages name it (bson's typeName)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int" if -(2 ** 31) <= value < 2 ** 31 else "long"
    names = {float: "double", str: "string", dict: "object", list: "array", bytes: "binData"}
    return next((name for kind, name in names.items() if isinstance(value, kind)), type(value).__name__)


_NAMES = {2: "BadValue", 9: "FailedToParse", 14: "TypeMismatch", 72: "InvalidOptions", 79: "UnknownReplWriteConcern",
          100: "UnsatisfiableWriteConcern", 123: "NotAReplicaSet", 238: "NotImplemented"}


def _given(value, default, kind: type, argument: str, qualified: str):
    """`value` as pymongo takes a concern argument: `None` keeps `default` (the parent's), anything
    but a `kind` is its TypeError, worded as pymongo words it."""
    if value is None:
        return default
    if not isinstance(value, kind):
        raise TypeError(f"{argument} must be an instance of {qualified}, not {type(value)}")
    return value


def _fail(code: int, msg: str):
    raise OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code, "codeName": _NAMES[code]})
