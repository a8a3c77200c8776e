"""The site's settings with the load run's floor view mounted (bench/floor.py, cms_site/floor_urls.py):
what `manage.py bench_load --only floor` serves, as `make serve` serves the site."""

from cms_site.settings import *  # noqa: F403

ROOT_URLCONF = "cms_site.floor_urls"
