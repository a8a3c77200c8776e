"""Streaming XML: elements at one depth, one at a time, in bounded memory, with line numbers.

expat is fed the file in chunks; each finished record (an element at `depth` whose name is in
`tags`, with its subtree) is handed out and forgotten (as `iterparse` with each element
cleared once read). The text of one element is capped at `MAX_RECORD_BYTES`: past it the
element keeps only its size (`Node.oversized`), its text is dropped as it arrives, and the
reader skips that record naming it, so a 60 MB `<message>` costs no more memory than a short one.
The same cap holds for all the text of one unit (a record, or an element named in `units`: a
WordPress `<wp:comment>`): past it the unit keeps no more text (`Node.total`) and at most
`KEPT_PAST_CAP` more elements, so a `<post>` of many elements each under the cap is bounded too.
Namespaces are reduced to local names (`dsq:id` -> `id`, `wp:comment` -> `comment`). expat
(2.4.1 and later) refuses entity expansion attacks ("billion laughs") by itself and resolves no external entities.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.parsers import expat

from comments.importers.records import MAX_RECORD_BYTES, SourceError

CHUNK = 1 << 16
ELEMENT_COST = 64  # bytes an element counts against its unit's cap beside its text and tag
KEPT_PAST_CAP = 64  # elements (without text) a unit over its cap still keeps


@dataclass
class Node:
    tag: str
    attrs: dict
    line: int
    parts: list = field(default_factory=list)
    children: list = field(default_factory=list)
    size: int = 0  # bytes of text (UTF-8) seen, kept or not
    total: int = 0  # of a unit: bytes of text of all its elements, kept or not
    unit: Node | None = field(default=None, repr=False)  # the unit whose cap this element's text counts against
    late: int = 0  # of a unit: elements kept (without text) after it went over the cap

    @property
    def oversized(self) -> bool:
        return self.size > MAX_RECORD_BYTES

    def largest(self) -> tuple[int, str]:
        """(size, tag) of the element of this subtree with the most text: is any over the cap?"""
        best = (self.size, self.tag)
        for child in self.children:
            best = max(best, child.largest())
        return best

    def add_text(self, data: str) -> None:
        size = len(data) if data.isascii() else len(data.encode("utf-8", "surrogatepass"))
        self.size += size
        if self.unit is not None and not self.unit.charge(size):
            self.parts.clear()  # the unit is over the cap: this element keeps nothing
            return
        if self.size > MAX_RECORD_BYTES:
            self.parts.clear()  # over the cap: only the size is kept
        else:
            self.parts.append(data)

    def charge(self, size: int) -> bool:
        """Count `size` bytes against this unit's cap: False once over it. What the unit kept before
        stays (at most the cap: its ids name the skipped record); nothing more is kept."""
        self.total += size
        return self.total <= MAX_RECORD_BYTES

    def over_cap(self) -> tuple[int, str] | None:
        """(size, tag) of what is over the cap in this unit (one element's text, else all of it), or None."""
        size, tag = self.largest()
        if size > MAX_RECORD_BYTES:
            return size, tag
        return (self.total, self.tag) if self.total > MAX_RECORD_BYTES else None

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def child(self, tag: str) -> Node | None:
        return next((c for c in self.children if c.tag == tag), None)

    def get(self, path: str, default: str = "") -> str:
        """The text of the descendant at `path` ("author/name"), stripped; `default` when absent."""
        node = self
        for tag in path.split("/"):
            node = node.child(tag) if node is not None else None
        return node.text.strip() if node is not None else default

    def attr(self, path: str, name: str) -> str:
        node = self
        for tag in path.split("/") if path else []:
            node = node.child(tag) if node is not None else None
        return (node.attrs.get(name) or "").strip() if node is not None else ""


def _local(name: str) -> str:
    return name.rsplit("}", 1)[-1]


def records(stream, *, root: str, depth: int, tags: set[str], what: str, units: set[str] | None = None):
    """Yield the `Node` of each element named in `tags` at `depth` (the root is depth 1). The text of
    a unit (an element named in `units`, by default the records) is capped as a whole."""
    units = tags if units is None else units
    parser = expat.ParserCreate(namespace_separator="}")
    parser.buffer_text = True
    done: list[Node] = []
    stack: list[Node] = []
    level = 0

    def start(name, attrs):
        nonlocal level
        level += 1
        local = _local(name)
        if level == 1 and local != root:
            raise SourceError(f"line {parser.CurrentLineNumber}", f"not {what}: the root element is <{local}>, "
                                                                   f"expected <{root}>")
        if stack or (level == depth and local in tags):
            node = Node(local, {_local(k): v for k, v in attrs.items()}, parser.CurrentLineNumber)
            node.unit = node if local in units else (stack[-1].unit if stack else None)
            # An element costs its unit some bytes whatever its text, so a unit of countless empty
            # elements reaches the cap too; past it, the unit keeps the first elements without text
            # (their attributes name the record: `<thread dsq:id>` of a post) and then none.
            unit = node.unit
            kept = unit is None or unit is node or unit.charge(ELEMENT_COST + len(local))
            if not kept and unit.late < KEPT_PAST_CAP:
                unit.late += 1
                kept = True
            if stack and kept:
                stack[-1].children.append(node)
            stack.append(node)

    def end(name):
        nonlocal level
        level -= 1
        if stack:
            node = stack.pop()
            if not stack:
                done.append(node)

    def chars(data):
        if stack:
            stack[-1].add_text(data)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    if isinstance(stream, str | bytes):
        stream = open(stream, "rb")  # noqa: SIM115  closed below
    try:
        while True:
            chunk = stream.read(CHUNK)
            try:
                parser.Parse(chunk, not chunk)
            except expat.ExpatError as exc:
                raise SourceError(f"line {exc.lineno}, column {exc.offset + 1}",
                                  f"malformed XML ({expat.ErrorString(exc.code)})") from None
            yield from done
            done.clear()
            if not chunk:
                break
    finally:
        stream.close()
