"""Streaming JSON: the elements of a top-level array, or the lines of a JSON Lines file, one at a
time in bounded memory (a buffer of about one element), with their position.

A JSON Lines file is read in bytes, one line at a time with a cap (`readline(size)`): a line
longer than `MAX_RECORD_BYTES` is read on in chunks and forgotten, and handed out as a
`Skipped` record naming its line, so one huge line neither fills the memory nor stops the
import (the records after it are read). An element of a JSON array past the same cap is read on
without being kept (only its brackets and strings are followed) and handed out as a `Skipped`
record naming it."""

from __future__ import annotations

import json
import re

from comments.importers.records import MAX_RECORD_BYTES, Skipped, SourceError, too_large

CHUNK = 1 << 16
_IN_STRING = re.compile(r'["\\]')  # what ends a string, or escapes the next character
_STRUCTURE = re.compile(r'["\[\]{}]')  # outside strings: what opens or closes a value
_decoder = json.JSONDecoder()


def _open(source):
    return open(source, encoding="utf-8") if isinstance(source, str | bytes) else source  # noqa: SIM115


def lines(source):
    """(line number, value) for each non-blank line, or (line number, Skipped) for a line over
    MAX_RECORD_BYTES; SourceError naming the line for one that is not JSON or not UTF-8.
    `source` is a path or a binary stream."""
    stream = open(source, "rb") if isinstance(source, str | bytes) else source  # noqa: SIM115  closed below
    number = 0
    try:
        while True:
            line = stream.readline(MAX_RECORD_BYTES + 1)
            if not line:
                return
            number += 1
            if len(line) > MAX_RECORD_BYTES and not line.endswith(b"\n"):
                size = len(line)
                del line
                while True:  # the rest of the line: read and forgotten, a chunk at a time
                    more = stream.readline(CHUNK)
                    size += len(more)
                    if not more or more.endswith(b"\n"):
                        break
                yield number, Skipped(f"line {number}", too_large(size))
                continue
            if not line.strip():
                continue
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                raise SourceError(f"line {number}", "not UTF-8 text") from None
            try:
                yield number, json.loads(text)
            except (ValueError, RecursionError) as exc:
                raise SourceError(f"line {number}", f"not JSON ({exc})") from None
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
        stream.close()  # JSON Lines: read again from the start, line by line
        yield from lines(source)
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
                if not done and len(buffer) - index <= MAX_RECORD_BYTES:
                    more = stream.read(CHUNK)
                    done = not more
                    buffer, index = buffer[index:] + more, 0
                    continue
                if not done and buffer[index] in '{["':  # over the cap: read past it, keep nothing
                    rest, size = _skip_value(buffer, index, stream)
                    number += 1
                    if rest is None:
                        raise SourceError(f"record {number}", "the array ends inside it (file cut short?)") from None
                    yield f"record {number}", Skipped(f"record {number}", too_large(size))
                    buffer, index = rest, 0
                    continue
                raise SourceError(f"record {number + 1}", f"not JSON ({exc})") from None
            number += 1
            yield f"record {number}", value
            buffer, index = buffer[end:], 0
    except UnicodeDecodeError:
        raise SourceError(f"record {number + 1}", "not UTF-8 text") from None
    finally:
        stream.close()


def _skip_value(buffer: str, index: int, stream):
    """Read past the JSON object, array or string starting at buffer[index], a chunk at a time,
    keeping none of it: (the text after it, its size in characters), or (None, size) when the
    stream ends inside it. Only strings (with their escapes) and brackets are followed."""
    depth, in_string, pos, size = 0, False, index, -index
    while True:
        match = (_IN_STRING if in_string else _STRUCTURE).search(buffer, pos)
        if match is None:
            size += len(buffer)
            skip = pos - len(buffer)  # 1 when the character an escape covers is in the next chunk
            buffer = stream.read(CHUNK)
            if not buffer:
                return None, size
            pos = max(0, skip)
            continue
        char, pos = match.group(), match.end()
        if in_string:
            if char == "\\":
                pos += 1
                continue
            in_string = False
            if depth == 0:
                return buffer[pos:], size + pos
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return buffer[pos:], size + pos
