"""bench/footprint.py: where an embedded store's bytes go, named by collection and index, and bytes
per comment (the load run's "Bytes per comment" table)."""

import docstore
from bench.footprint import docstore_parts, summary, table_parts


def test_the_store_is_split_into_documents_and_each_index(tmp_path):
    db = docstore.Client(str(tmp_path / "store.sqlite3"), default_db="site")["site"]
    db.comments.insert_many([{"_id": f"1:{n:06d}", "discussion_id": 1, "seq": n, "text": "x" * 200}
                             for n in range(500)])
    db.comments.create_index([("discussion_id", 1), ("seq", 1)], name="discussion_seq")
    db.other.insert_one({"_id": 1})
    parts = {(p["collection"], p["part"]): p["bytes"] for p in docstore_parts(str(db.path))}
    assert {("comments", "documents"), ("comments", "_id_"), ("comments", "discussion_seq"),
            ("other", "documents")} <= set(parts)
    assert parts[("comments", "documents")] > 500 * 200 > parts[("comments", "discussion_seq")]
    assert all(name != "comments" or part in ("documents", "_id_", "discussion_seq") for name, part in parts)
    totals = summary(docstore_parts(str(db.path)), 500)
    engine = sum(b for (c, _), b in parts.items() if c == "(engine)")
    assert totals["bytes"] == sum(parts.values()) - engine
    assert totals["per_comment"] == round(totals["bytes"] / 500, 1)
    assert totals["documents_bytes"] + totals["index_bytes"] == totals["bytes"]


def test_a_peers_tables_and_their_indexes(tmp_path):
    import sqlite3

    path = tmp_path / "peer.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE comments (id INTEGER PRIMARY KEY, thread INTEGER, text TEXT)")
    conn.execute("CREATE INDEX comments_thread ON comments (thread)")
    conn.execute("CREATE TABLE unrelated (x)")
    conn.executemany("INSERT INTO comments (thread, text) VALUES (?, ?)", [(n % 3, "y" * 100) for n in range(300)])
    conn.commit()
    conn.close()
    parts = table_parts(str(path), ("comments",))
    assert [(p["collection"], p["part"]) for p in parts] == [("comments", "documents"), ("comments", "comments_thread")]
    assert all(p["bytes"] > 0 for p in parts)
