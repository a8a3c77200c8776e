"""Shared infrastructure every app uses: the MongoDB connection (mongo), the manager base with
the registry of every manager's indexes and shard keys (managers) and the commands that apply
them (mongo_indexes, mongo_shard, mongo_copy), domain errors and their HTTP edges (errors,
api_errors, serving, error_reports, openapi), request parsing (parsers, paging, cursors),
rate limits (throttling, clients), who may write (writers), user text (text, markdown),
safe redirects (redirects) and the API's shared serializers. No app's domain code."""
