"""Hash lookups for the embedded engine: mongomock's answers without whole-collection scans.

Part of the connection module (installed by `cms_site.mongo` when it creates the
embedded client; never used against a real server). mongomock finds documents by
scanning: every update filter, and every unique-index check on insert, walks the whole
collection, which makes a fan-out to thousands of followers quadratic where a server
does index lookups. This gives mongomock what a server has, hash lookups, without
changing what any query returns:

- Unique indexes (not sparse, not partial) get a map {key values: {_id, ...}}, built
  by one scan when first needed and extended by every write that passes through
  mongomock's `_ensure_uniques` (every insert, upsert and modifying update does). The
  map is a superset: entries left behind by deletes or changed keys are filtered out by
  re-checking each candidate against the current document.
- The unique check of a new or modified document looks up its key in that map and
  re-checks the candidates with mongomock's own `filter_applies`, as mongomock does.
- `_iter_documents(filter)`, the scan behind find, update and count, uses a lookup
  when the filter pins `_id` to a value (or `$in` a list of values) or pins every field
  of such a unique index to plain values; candidates are again re-checked with
  `filter_applies`. Any other filter, and any index whose documents hold arrays or
  sub-documents in an indexed field, falls back to mongomock's scan.

Documents matched through a lookup come in lookup order rather than insertion order:
MongoDB promises no order without a sort either.
"""

from __future__ import annotations

import re
from collections import defaultdict
from contextlib import contextmanager

_SCALARS_EXCLUDED = (dict, list, tuple, set, re.Pattern)
_UNSAFE = object()


def _plain(value) -> bool:
    if isinstance(value, _SCALARS_EXCLUDED) or type(value).__name__ == "Regex":
        return False
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _internal_id(value, helpers):
    return helpers.hashdict(value) if isinstance(value, dict) else value


class _KeyMap:
    __slots__ = ("fields", "ids", "safe")

    def __init__(self, fields: tuple[str, ...]):
        self.fields = fields
        self.ids: dict[tuple, set] = defaultdict(set)
        self.safe = True

    def key(self, doc, helpers):
        values = []
        for name in self.fields:
            try:
                value = helpers.get_value_by_dot(doc, name)
            except KeyError:
                value = None
            if not _plain(value):
                return _UNSAFE
            values.append(value)
        return tuple(values)

    def add(self, internal_id, doc, helpers) -> None:
        key = self.key(doc, helpers)
        if key is _UNSAFE:
            self.safe = False
        else:
            self.ids[key].add(internal_id)


_restore = None


def install() -> None:
    """Patch mongomock's Collection (idempotent)."""
    global _restore
    if _restore is not None:
        return
    from mongomock import collection as mcoll
    from mongomock import helpers
    from mongomock.filtering import filter_applies
    from pymongo.errors import DuplicateKeyError

    Collection = mcoll.Collection
    original_iter = Collection.__dict__["_iter_documents"]
    # The strict engine (cms_site.mongo_strict, installed first) calls the unique check
    # as `_unique_check` after its size check; without it mongomock calls `_ensure_uniques`.
    uniques_name = "_unique_check" if "_unique_check" in Collection.__dict__ else "_ensure_uniques"
    original_uniques = Collection.__dict__[uniques_name]

    def maps(collection) -> tuple[list[_KeyMap], bool]:
        """The key maps of the collection's fast unique indexes; and whether every unique index is fast."""
        store = collection._store
        cache = store.__dict__.setdefault("_lookup_key_maps", {})
        documents = store._documents
        found, all_fast = [], True
        for name, index in list(store.indexes.items()):
            if not index.get("unique"):
                continue
            if index.get("sparse") or index.get("partialFilterExpression") is not None:
                all_fast = False
                continue
            # Keyed by name and validated by identity against the objects the entry holds: an
            # id() in the key could be reused by a new index or store after a drop and re-create
            # (and alias a stale map), while an entry holding both objects keeps them alive.
            cached = cache.get(name)
            keymap = cached[2] if cached is not None and cached[0] is index and cached[1] is documents else None
            if keymap is None:
                keymap = _KeyMap(tuple(k for k, _ in index["key"]))
                for internal_id, doc in list(documents.items()):
                    keymap.add(internal_id, doc, helpers)
                    if not keymap.safe:
                        break
                cache[name] = (index, documents, keymap)
            if keymap.safe:
                found.append(keymap)
            else:
                all_fast = False
        return found, all_fast

    def lookup(collection, ids) -> list:
        documents = collection._store._documents
        out, seen = [], set()
        for internal_id in ids:
            if internal_id in seen:
                continue
            seen.add(internal_id)
            doc = documents.get(internal_id)
            if doc is not None:
                out.append(doc)
        return out

    def candidates(collection, spec):
        """Documents that may match `spec` (a superset of the matches), or None to scan."""
        if not isinstance(spec, dict) or not spec or any(k.startswith("$") for k in spec):
            return None
        if "_id" in spec:
            value = spec["_id"]
            if isinstance(value, dict) and set(value) == {"$in"} and isinstance(value["$in"], list | tuple) \
                    and all(_plain(v) for v in value["$in"]):
                return lookup(collection, [_internal_id(v, helpers) for v in value["$in"]])
            if _plain(value):
                return lookup(collection, [value])
        fast, _ = maps(collection)
        for keymap in fast:
            if all(name in spec and _plain(spec[name]) for name in keymap.fields):
                return lookup(collection, keymap.ids.get(tuple(spec[name] for name in keymap.fields), ()))
        return None

    def _iter_documents(self, filter):
        if self._store.is_empty:
            return original_iter(self, filter)
        found = candidates(self, filter)
        if found is None:
            return original_iter(self, filter)
        return (doc for doc in found if filter_applies(filter, doc))

    def _ensure_uniques(self, new_data):
        fast, all_fast = maps(self)
        new_id = _internal_id(new_data.get("_id"), helpers)
        documents = self._store._documents
        for keymap in fast:
            key = keymap.key(new_data, helpers)
            if key is _UNSAFE:
                keymap.safe = False
                all_fast = False
                continue
            spec = dict(zip(keymap.fields, key, strict=True))
            for other in keymap.ids.get(key, ()):
                if other == new_id:
                    continue
                doc = documents.get(other)
                if doc is not None and filter_applies(spec, doc):
                    raise DuplicateKeyError("E11000 Duplicate Key Error", 11000)
        for keymap in fast:  # before the scan below, which may look candidates up in these maps
            if keymap.safe:
                keymap.add(new_id, new_data, helpers)
        if not all_fast:
            original_uniques(self, new_data)

    Collection._iter_documents = _iter_documents
    setattr(Collection, uniques_name, _ensure_uniques)

    def restore():
        Collection._iter_documents = original_iter
        setattr(Collection, uniques_name, original_uniques)

    _restore = restore


def uninstall() -> None:
    """Give mongomock back its own scans."""
    global _restore
    if _restore is not None:
        _restore()
        _restore = None


@contextmanager
def scanning():
    """mongomock's own whole-collection scans for the duration (tests compare answers)."""
    was_installed = _restore is not None
    uninstall()
    try:
        yield
    finally:
        if was_installed:
            install()
