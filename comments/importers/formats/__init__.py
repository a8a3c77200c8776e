"""Source readers, by the FORMAT name `manage.py comments_import` takes."""

from comments.importers.formats import disqus, isso, jsonl, remark42, wxr, xtd

READERS = {
    "disqus": disqus.read,
    "wxr": wxr.read,
    "xtd": xtd.read,
    "remark42": remark42.read,
    "isso": isso.read,
    "jsonl": jsonl.read,
}
