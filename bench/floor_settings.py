"""The site's settings with the floor view mounted at /floor/ (bench/floor.py): what
`manage.py bench_load --only floor` serves, as `make serve` serves the site."""

from cms_site.settings import *  # noqa: F403

ROOT_URLCONF = "bench.floor"
