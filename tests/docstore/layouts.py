"""Files as an older version of the embedded engine left them, made from a file this one wrote."""

import sqlite3

import bson

from docstore.storage import keys as K


def as_key_layout_4(conn: sqlite3.Connection) -> None:
    """Every stored byte key (each documents table's `id`, each index table's key columns) in the
    layout of schema version 4 (docstore.storage.keys.v4_key), as that version wrote them; the
    caller sets `user_version` and commits."""
    conn.create_function("v4", 1, lambda key: None if key is None else K.v4_key(bytes(key)))
    for _, tid, blob in conn.execute("SELECT name, tid, info FROM _docstore_catalog").fetchall():
        info = bson.decode(blob)
        if not info.get("materialized"):
            continue
        conn.execute(f"UPDATE d{tid} SET id = v4(id)")
        for index in info.get("indexes", []):
            table = index.get("table")
            if table:
                cols = [row[1] for row in conn.execute(f"PRAGMA table_info({table})") if row[1].startswith("k")]
                conn.execute(f"UPDATE {table} SET {', '.join(f'{c} = v4({c})' for c in cols)}")
