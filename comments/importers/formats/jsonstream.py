"""Streaming JSON: the elements of a top-level array, or the lines of a JSON Lines file, one at a
time in bounded memory (a buffer of about one element), with their position."""

from __future__ import annotations

import json

from comments.importers.records import SourceError

CHUNK = 1 << 16
MAX_ELEMENT = 64 << 20  # one element larger than this is not a comment: refuse it
_decoder = json.JSONDecoder()


def _open(source):
    return open(source, encoding="utf-8") if isinstance(source, str | bytes) else source  # noqa: SIM115


def lines(source):
    """(line number, value) for each non-blank line; SourceError naming the line for one that is not JSON."""
    stream = _open(source)
    try:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except (ValueError, RecursionError) as exc:
                raise SourceError(f"line {number}", f"not JSON ({exc})") from None
    except UnicodeDecodeError:
        raise SourceError("the file", "not UTF-8 text") from None
    finally:
        stream.close()


def array_or_lines(source):
    """(position, value) of each element of a JSON array, or of each line of JSON Lines (a Django
    `dumpdata --format jsonl`). Positions: "record N" (1-based) or "line N"."""
    stream = _open(source)
    try:
        head = stream.read(CHUNK)
    except UnicodeDecodeError:
        stream.close()
        raise SourceError("the file", "not UTF-8 text") from None
    if not head.lstrip().startswith("["):
        import io

        rest = io.StringIO(head)  # JSON Lines: read again from the start, line by line
        yield from lines(_Chain(rest, stream))
        return
    buffer, index, number, done = head, head.index("[") + 1, 0, False
    try:
        while True:
            while True:  # skip whitespace and one comma between elements
                while index < len(buffer) and buffer[index] in " \t\r\n":
                    index += 1
                if index < len(buffer) and buffer[index] == "," and number:
                    index += 1
                    continue
                break
            if index >= len(buffer) and not done:
                more = stream.read(CHUNK)
                done = not more
                buffer, index = buffer[index:] + more, 0
                continue
            if index < len(buffer) and buffer[index] == "]":
                return
            if index >= len(buffer):
                raise SourceError(f"record {number + 1}", "the array ends without ']' (file cut short?)")
            try:
                value, end = _decoder.raw_decode(buffer, index)
            except (ValueError, RecursionError) as exc:
                if not done and len(buffer) - index < MAX_ELEMENT:
                    more = stream.read(CHUNK)
                    done = not more
                    buffer, index = buffer[index:] + more, 0
                    continue
                raise SourceError(f"record {number + 1}", f"not JSON ({exc})") from None
            number += 1
            yield f"record {number}", value
            buffer, index = buffer[end:], 0
    except UnicodeDecodeError:
        raise SourceError(f"record {number + 1}", "not UTF-8 text") from None
    finally:
        stream.close()


class _Chain:
    """Lines of an already-read head, then of the rest of the stream."""

    def __init__(self, head, stream):
        self.head, self.stream = head, stream

    def __iter__(self):
        pending = ""
        for line in self.head:
            if line.endswith("\n"):
                yield pending + line
                pending = ""
            else:
                pending += line
        for line in self.stream:
            yield pending + line
            pending = ""
        if pending:
            yield pending

    def close(self):
        self.stream.close()
