"""Query semantics, written from MongoDB's manual: matching, update operators, projections,
aggregation stages and expressions, collation, `let` variables, schema validation and the shard-key
rules. Pure functions of documents: imports storage (BSON comparison order, documents read in
place) and nothing above it."""
