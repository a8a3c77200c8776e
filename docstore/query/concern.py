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
from pymongo.errors import OperationFailure
from pymongo.read_concern import DEFAULT_READ_CONCERN, ReadConcern

DEFAULT = DEFAULT_READ_CONCERN
SERVED = frozenset({"local", "available", "majority"})
LEVELS = ("local", "majority", "linearizable", "available", "snapshot")


def of(read_concern, default: ReadConcern = DEFAULT) -> ReadConcern:
    """The read concern a `get_database`/`get_collection`/`with_options` argument gives: `None` keeps
    `default` (pymongo's rule: the parent's), anything but a ReadConcern is pymongo's TypeError."""
    if read_concern is None:
        return default
    if not isinstance(read_concern, ReadConcern):
        raise TypeError(f"read_concern must be an instance of pymongo.read_concern.ReadConcern, "
                        f"not {type(read_concern)}")
    return read_concern


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


_NAMES = {9: "FailedToParse", 14: "TypeMismatch", 72: "InvalidOptions", 123: "NotAReplicaSet",
          238: "NotImplemented"}


def _fail(code: int, msg: str):
    raise OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code, "codeName": _NAMES[code]})
