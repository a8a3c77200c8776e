"""Settings of the benchmark harness: the site's settings with the `bench` app added (wiring, as
the site's settings are).

The harness (`manage.py bench`, `bench_load`, `bench_scale`) is not an app of the product:
cms_site/settings.py does not list it, so the site never loads its commands, its peer
experiments or their templates (bench/templates/xtd_bench). manage.py runs the bench's
commands with these settings (DJANGO_SETTINGS_MODULE=cms_site.bench_settings, as the Makefile's
bench targets set it); the peer, django-comments-xtd, has settings of its own
(bench/xtd_settings.py) in its own process.
"""

from cms_site.settings import *  # noqa: F403
from cms_site.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench"]
