"""dumpdata without natural keys: content types by id, named by the dump's contenttypes records."""

import pytest

from tests.imports.support import run_import, shape, utc
from topics.models import Topic

pytestmark = pytest.mark.django_db


def test_content_type_ids_are_named_by_the_dump(tmp_path, editor, make_topic):
    editor.is_superuser = True
    editor.save()
    mine = make_topic("document", "threaded", title="Mine")
    path = tmp_path / "dump.json"
    path.write_text(
        '[{"model": "contenttypes.contenttype", "pk": 7, "fields": {"app_label": "blog", "model": "post"}},\n'
        ' {"model": "contenttypes.contenttype", "pk": 9, "fields": {"app_label": "topics", "model": "topic"}},\n'
        ' {"model": "django_comments.comment", "pk": 1, "fields": {"content_type": 7, "object_pk": "3", "user_name": "A",'
        ' "comment": "on a blog post", "submit_date": "2020-01-01T00:00:00Z"}},\n'
        f' {{"model": "django_comments.comment", "pk": 2, "fields": {{"content_type": 9, "object_pk": "{mine.pk}",'
        ' "user_name": "B", "comment": "on this site\'s topic", "submit_date": "2020-01-02T00:00:00Z"}},\n'
        ' {"model": "django_comments.comment", "pk": 3, "fields": {"content_type": 99, "object_pk": "1", "user_name": "C",'
        ' "comment": "unknown type", "submit_date": "2020-01-03T00:00:00Z"}}]', encoding="utf-8")
    assert "3 imported" in run_import("xtd", path)
    assert shape(Topic.objects.get(title="blog.post 3")) == [
        ("on a blog post", "A", True, "visible", utc(2020, 1, 1), None, 0)]
    assert shape(mine) == [("on this site's topic", "B", True, "visible", utc(2020, 1, 2), None, 0)]
    assert Topic.objects.filter(title="contenttype99 1").exists()
