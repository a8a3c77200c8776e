"""MongoDB's wire protocol: the messages a driver and a server exchange over TCP (MongoDB manual,
"MongoDB Wire Protocol").

Every message starts with a 16-byte header: messageLength, requestID, responseTo, opCode (int32,
little-endian). The engine speaks:

- OP_MSG (2013), what every current driver sends: flagBits, then sections. A kind 0 section is the
  command's body (one BSON document, its first key the command's name, `$db` the database); a kind 1
  section is a document sequence (size, an identifier such as `documents`, `updates` or `deletes`,
  then BSON documents), which the server reads as that field of the body. Flag bit 0
  (checksumPresent) puts a CRC-32C after the sections; bit 1 (moreToCome) on a request means the
  client expects no reply (an unacknowledged write).
- OP_QUERY (2004) on `<db>.$cmd`, only for the handshake: a driver opens a connection with a
  legacy `hello`/`isMaster` in OP_QUERY until it knows the server speaks OP_MSG, and the answer is
  an OP_REPLY (1).

OP_COMPRESSED is never sent to the engine: it advertises no compressor in its `hello`, and a driver
compresses only with a compressor both sides named.
"""

from __future__ import annotations

import struct

import bson
from bson.codec_options import CodecOptions

OP_REPLY = 1
OP_QUERY = 2004
OP_COMPRESSED = 2012
OP_MSG = 2013

CHECKSUM_PRESENT = 1 << 0
MORE_TO_COME = 1 << 1
EXHAUST_ALLOWED = 1 << 16
# Flag bits a client may set on OP_MSG (the manual: bits 0, 1 and 16; any other set bit in the low
# 16 is an error the server refuses the message for).
KNOWN_FLAGS = CHECKSUM_PRESENT | MORE_TO_COME | EXHAUST_ALLOWED

HEADER = struct.Struct("<iiii")
# A server refuses a message larger than maxMessageSizeBytes (48,000,000), which its `hello` names.
MAX_MESSAGE_SIZE = 48_000_000
MAX_BSON_SIZE = 16 * 1024 * 1024

# Commands are read as the server reads them: BSON documents, with their types as stored (datetimes
# with a zone, binary subtype 4 as UUID objects are kept as Binary so they go back unchanged).
CODEC = CodecOptions(tz_aware=True)


class ProtocolError(Exception):
    """A message the server cannot read: the connection is closed, as a server closes it."""


class Message:
    __slots__ = ("request_id", "op_code", "flags", "body", "sequences", "legacy_collection")

    def __init__(self, request_id, op_code, flags, body, sequences=None, legacy_collection=None):
        self.request_id = request_id
        self.op_code = op_code
        self.flags = flags
        self.body = body
        self.sequences = sequences or {}
        self.legacy_collection = legacy_collection

    @property
    def wants_reply(self) -> bool:
        return not (self.op_code == OP_MSG and self.flags & MORE_TO_COME)


def read_exactly(sock, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            if got == 0 and not chunks:
                raise EOFError
            raise ProtocolError("connection closed in the middle of a message")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_message(sock) -> Message:
    """The next message from a client; EOFError when it closed the connection between messages."""
    length, request_id, _response_to, op_code = HEADER.unpack(read_exactly(sock, HEADER.size))
    if length < HEADER.size or length > MAX_MESSAGE_SIZE:
        raise ProtocolError(f"message length {length} out of range")
    payload = read_exactly(sock, length - HEADER.size)
    if op_code == OP_MSG:
        return _parse_msg(request_id, payload)
    if op_code == OP_QUERY:
        return _parse_query(request_id, payload)
    raise ProtocolError(f"unsupported opCode {op_code}")


def _document(payload: bytes, at: int) -> tuple[dict, int]:
    if at + 4 > len(payload):
        raise ProtocolError("truncated BSON document")
    (size,) = struct.unpack_from("<i", payload, at)
    if size < 5 or at + size > len(payload):
        raise ProtocolError("BSON document size out of range")
    try:
        return bson.decode(payload[at:at + size], CODEC), at + size
    except Exception as exc:  # bson.errors.InvalidBSON and friends
        raise ProtocolError(f"invalid BSON: {exc}") from exc


def _parse_msg(request_id: int, payload: bytes) -> Message:
    (flags,) = struct.unpack_from("<I", payload, 0)
    if flags & 0xFFFF & ~KNOWN_FLAGS:
        raise ProtocolError(f"unknown required flag bits in OP_MSG: {flags:#x}")
    end = len(payload) - (4 if flags & CHECKSUM_PRESENT else 0)
    at, body, sequences = 4, None, {}
    while at < end:
        kind = payload[at]
        at += 1
        if kind == 0:
            if body is not None:
                raise ProtocolError("OP_MSG with more than one body section")
            body, at = _document(payload, at)
        elif kind == 1:
            (size,) = struct.unpack_from("<i", payload, at)
            stop = at + size
            if size < 5 or stop > end:
                raise ProtocolError("document sequence size out of range")
            nul = payload.index(b"\x00", at + 4, stop)
            identifier = payload[at + 4:nul].decode()
            at = nul + 1
            docs = []
            while at < stop:
                doc, at = _document(payload, at)
                docs.append(doc)
            sequences.setdefault(identifier, []).extend(docs)
        else:
            raise ProtocolError(f"unknown OP_MSG section kind {kind}")
    if body is None:
        raise ProtocolError("OP_MSG without a body section")
    return Message(request_id, OP_MSG, flags, body, sequences)


def _parse_query(request_id: int, payload: bytes) -> Message:
    flags, = struct.unpack_from("<i", payload, 0)
    nul = payload.index(b"\x00", 4)
    collection = payload[4:nul].decode()
    at = nul + 1 + 8  # numberToSkip, numberToReturn
    query, at = _document(payload, at)
    if "$query" in query:  # the legacy wrapping of a command with read preference
        query = query["$query"]
    return Message(request_id, OP_QUERY, flags, query, legacy_collection=collection)


def encode_reply(message: Message, request_id: int, reply: dict, *, more_to_come: bool = False,
                 response_to: int | None = None) -> bytes:
    """The answer to `message`: an OP_MSG for an OP_MSG, an OP_REPLY for a legacy OP_QUERY.

    `more_to_come` marks one reply of an exhaust stream (the server will send another without a
    request); each later reply of that stream answers the previous reply (`response_to`)."""
    doc = bson.encode(reply, codec_options=CODEC)
    if message.op_code == OP_MSG:
        payload = struct.pack("<I", MORE_TO_COME if more_to_come else 0) + b"\x00" + doc
        op = OP_MSG
    else:
        # responseFlags, cursorID (0: a command's reply is one document), startingFrom, numberReturned
        payload = struct.pack("<iqii", 0, 0, 0, 1) + doc
        op = OP_REPLY
    answers = message.request_id if response_to is None else response_to
    return HEADER.pack(HEADER.size + len(payload), request_id, answers, op) + payload
