"""The static files storage of a site with DEBUG off: WhiteNoise's compressed manifest storage
(hashed names cached forever, pre-compressed), with each name's URL worked out once per process.

`ManifestFilesMixin` reads the manifest (name -> hashed name) when the storage is created and
`collectstatic` writes it before the server starts, so a name's URL is fixed for the life of the
process; Django's `url()` still joins, splits and quotes it on every `{% static %}` (three on
every page). Only names the manifest lists are remembered (a bounded set); `force=True` and
names outside it take Django's path each time. `collectstatic` itself builds URLs through
`_url()` (HashedFilesMixin.url_converter), never through this."""

from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticFilesStorage(CompressedManifestStaticFilesStorage):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._urls: dict[str, str] = {}

    def url(self, name, force=False):
        if force:
            return super().url(name, force)
        found = self._urls.get(name)
        if found is None:
            found = super().url(name, force)
            if name in self.hashed_files:
                self._urls[name] = found
        return found
