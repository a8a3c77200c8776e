"""The static files storage of a site with DEBUG off (core/staticfiles.py): WhiteNoise's manifest
storage, each listed name's URL worked out once per process."""

import json
from unittest import mock

from whitenoise.storage import CompressedManifestStaticFilesStorage

from core.staticfiles import StaticFilesStorage


def _storage(tmp_path):
    (tmp_path / "staticfiles.json").write_text(json.dumps(
        {"version": "1.1", "hash": "x", "paths": {"css/site.css": "css/site.0123abcd.css"}}))
    return StaticFilesStorage(location=str(tmp_path), base_url="/static/")


def test_a_listed_name_is_worked_out_once_and_is_the_hashed_url(tmp_path, settings):
    settings.DEBUG = False
    storage = _storage(tmp_path)
    with mock.patch.object(CompressedManifestStaticFilesStorage, "url", autospec=True,
                           side_effect=CompressedManifestStaticFilesStorage.url) as url:
        assert [storage.url("css/site.css") for _ in range(3)] == ["/static/css/site.0123abcd.css"] * 3
    assert url.call_count == 1


def test_names_outside_the_manifest_and_forced_urls_take_djangos_path(tmp_path, settings):
    settings.DEBUG = False
    storage = _storage(tmp_path)
    storage.manifest_strict = False  # an unlisted name is hashed from the file, as Django does then
    (tmp_path / "js").mkdir()
    (tmp_path / "js" / "none.js").write_text("let x;")
    with mock.patch.object(CompressedManifestStaticFilesStorage, "url", autospec=True,
                           side_effect=CompressedManifestStaticFilesStorage.url) as url:
        storage.url("js/none.js")
        storage.url("js/none.js")
        storage.url("css/site.css", force=True)
        storage.url("css/site.css", force=True)
    assert url.call_count == 4 and storage._urls == {}
