"""Change events as a server shapes them (MongoDB manual, "Change Events"): what a write records
in the change table (docstore.storage.changes) and what a change stream reads back from it.

- `documentKey`: `_id` and, on a collection with a declared shard key, the shard key's fields
  (manual: "for a sharded collection, also displays the full shard key").
- `updateDescription`: what an update changed, as the server's delta reports it: `updatedFields`
  (dotted paths into embedded documents, `path.N` for changed or appended array elements, the
  whole array when most of it changed), `removedFields`, and `truncatedArrays`
  (`{field, newSize}` for an array that got shorter).
- Resume tokens: `{_data: <hex>}` as a server's, upper-case hex: a version byte, the change
  table's id (random, made with the file: a token of another file, or of a database dropped and
  made again, is told apart), the change's position (`seq`, 8 bytes) and its kind (0: the change
  itself or a position between changes, 1: the invalidate event after a drop or rename). A token
  names a position: a stream resumed from it returns the changes after it.
- `clusterTime`: Timestamp(seconds of the write, low 32 bits of its `seq`), so it grows with the
  commit order within a second; `wallTime`: the write's wall clock time in milliseconds.
"""

from __future__ import annotations

import datetime
import operator

import bson
from bson import Timestamp
from bson.codec_options import CodecOptions
from pymongo.errors import OperationFailure

TOKEN_VERSION = "82"
EVENT, INVALIDATE = 0, 1

# An array whose changed elements are more than this share of its new length is reported whole.
_WHOLE_ARRAY_SHARE = 0.5


def _bad_token(value) -> OperationFailure:
    msg = f"Bad resume token: _data of missing or of wrong type. Expected string, got {value!r}"
    return OperationFailure(msg, 260, {"ok": 0.0, "errmsg": msg, "code": 260, "codeName": "InvalidResumeToken"})


def token(feed: int, seq: int, kind: int = EVENT) -> dict:
    return {"_data": f"{TOKEN_VERSION}{feed:016X}{seq:016X}{kind:02X}"}


def parse_token(value) -> tuple[int, int, int]:
    """(feed, seq, kind) of a resume token; InvalidResumeToken (260) for anything else, as from a server."""
    data = value.get("_data") if isinstance(value, dict) else None
    if not isinstance(data, str) or len(data) != 36 or not data.startswith(TOKEN_VERSION):
        raise _bad_token(data if data is not None else value)
    try:
        return int(data[2:18], 16), int(data[18:34], 16), int(data[34:], 16)
    except ValueError:
        raise _bad_token(data) from None


def document_key(doc: dict, shard_key: dict | None) -> dict:
    key = {"_id": doc["_id"]}
    for field in shard_key or ():
        if field == "_id":
            continue
        value = doc
        for part in field.split("."):
            value = value.get(part, _MISSING) if isinstance(value, dict) else _MISSING
            if value is _MISSING:
                break
        if value is not _MISSING:
            key[field] = value
    return key


_MISSING = object()


def _same(a, b) -> bool:
    """Equal as BSON compares for a change: the same type and value (1 and 1.0 differ)."""
    return type(a) is type(b) and a == b and (not isinstance(a, dict) or list(a) == list(b))


def update_description(old: dict, new: dict) -> dict:
    updated, removed, truncated = {}, [], []
    _diff(old, new, "", updated, removed, truncated)
    return {"updatedFields": updated, "removedFields": removed, "truncatedArrays": truncated}


def _diff(old: dict, new: dict, prefix: str, updated: dict, removed: list, truncated: list) -> None:
    for field, value in new.items():
        path = prefix + field
        if field not in old:
            updated[path] = value
            continue
        before = old[field]
        if _same(before, value):
            continue
        if isinstance(before, dict) and isinstance(value, dict):
            _diff(before, value, path + ".", updated, removed, truncated)
        elif isinstance(before, list) and isinstance(value, list):
            _diff_array(before, value, path, updated, truncated)
        else:
            updated[path] = value
    for field in old:
        if field not in new:
            removed.append(prefix + field)


def array_replaced(before: int, appended: int) -> bool:
    """Whether an append of `appended` elements to an array of `before` is described as the whole
    array (`_diff_array`'s rule) rather than as one `path.N` per new element."""
    return appended > 1 and appended > (before + appended) * _WHOLE_ARRAY_SHARE


def _diff_array(before: list, value: list, path: str, updated: dict, truncated: list) -> None:
    if len(value) >= len(before) and value[:len(before)] == before:  # appended to ($push): one C-level compare
        changed = range(len(before), len(value))
    else:
        # The changed positions, counted only until they make the whole array the description (an
        # array shifted by `$push` with `$slice`: every position changes, and the first share tells).
        share = len(value) * _WHOLE_ARRAY_SHARE
        # Positions that compare unequal (C-level) are changed ones too: when they alone pass the
        # share, the answer is known without the type-exact comparison of each position.
        unequal = sum(map(operator.ne, before, value)) + max(0, len(value) - len(before))
        if unequal > share and unequal > 1:
            updated[path] = value
            return
        changed = []
        for n in range(len(value)):
            if n >= len(before) or not _same(before[n], value[n]):
                changed.append(n)
                if len(changed) > share and len(changed) > 1:
                    updated[path] = value
                    return
    if value and len(changed) > len(value) * _WHOLE_ARRAY_SHARE and len(changed) > 1:  # array_replaced
        updated[path] = value
        return
    if len(value) < len(before):
        truncated.append({"field": path, "newSize": len(value)})
    for n in changed:
        updated[f"{path}.{n}"] = value[n]


def cluster_time(seq: int, at_us: int) -> Timestamp:
    return Timestamp(at_us // 1_000_000, seq & 0xFFFFFFFF)


def event(row: tuple, feed: int, db: str, codec: CodecOptions) -> dict:
    """The change event of one change-table row (seq, at, coll, op, key, doc, upd) of change table `feed`."""
    seq, at, coll, op, key, doc, upd = row
    out = {"_id": token(feed, seq), "operationType": op, "clusterTime": cluster_time(seq, at),
           "wallTime": _wall(at, codec)}
    if op in ("insert", "replace"):
        out["fullDocument"] = bson.decode(doc, codec)
    out["ns"] = {"db": db, "coll": coll}
    if op == "rename":
        out["to"] = {"db": db, "coll": bson.decode(doc)["coll"]}
    if key is not None:
        out["documentKey"] = bson.decode(key, codec)
    if op == "update":
        out["updateDescription"] = bson.decode(upd, codec)
    return out


def invalidate(feed: int, seq: int, at_us: int, codec: CodecOptions) -> dict:
    return {"_id": token(feed, seq, INVALIDATE), "operationType": "invalidate", "clusterTime": cluster_time(seq, at_us),
            "wallTime": _wall(at_us, codec)}


def _wall(at_us: int, codec: CodecOptions) -> datetime.datetime:
    """wallTime: a BSON date, milliseconds (the stored microseconds cut)."""
    moment = datetime.datetime.fromtimestamp(at_us // 1000 / 1000, datetime.UTC)
    return moment if codec.tz_aware else moment.replace(tzinfo=None)
