"""Moving comments in and out of Commons (docs/import.md).

- `formats/`: one streaming reader per source format (Disqus XML, WordPress WXR,
  django-comments(-xtd) dumpdata JSON, Remark42 backup, Isso SQLite, our own JSON Lines),
  each yielding `records.SourceThread` and `records.SourceComment` in bounded memory;
- `service.comments_import`: stages a source, then writes it topic by topic through
  each topic's storage manager (resumable, idempotent);
- `export.comments_export`: JSON Lines or Disqus XML of the whole site or one topic.
"""
