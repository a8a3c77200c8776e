"""Storage: the SQLite file (WAL, connections and transactions), the byte-comparable key encoding in
BSON's comparison order, cuts of stored BSON, documents read in place and the cache of kept
documents. The bottom layer: imports no other part of the engine."""
