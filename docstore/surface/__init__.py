"""The pymongo surface: Client, Database, Collection and cursors, with pymongo's own result and
error classes. The top layer: it may import every layer below (exec, plan, query, storage); nothing
below imports it."""
