"""The harness is not an app of the site: only cms_site/bench_settings.py installs it, and manage.py runs the
bench's commands with those settings."""

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.template import TemplateDoesNotExist
from django.template.loader import get_template

ROOT = Path(__file__).resolve().parents[2]


def test_the_site_does_not_install_the_harness_or_its_peer():
    assert "bench" not in settings.INSTALLED_APPS
    assert not any("xtd" in app for app in settings.INSTALLED_APPS)
    try:
        get_template("xtd_bench/page.html")  # the peer's templates: bench/templates, an app directory of bench
    except TemplateDoesNotExist:
        pass
    else:
        raise AssertionError("the site's template loaders find the peer's templates")


def test_the_bench_settings_add_the_harness_to_the_site():
    from cms_site import bench_settings
    from cms_site import settings as site

    assert bench_settings.INSTALLED_APPS == [*site.INSTALLED_APPS, "bench"]


def test_manage_py_runs_the_bench_commands_with_the_bench_settings():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.setdefault("SECRET_KEY", "bench-only-insecure-key")
    for command in ("bench", "bench_load", "bench_scale"):
        done = subprocess.run([sys.executable, "manage.py", command, "--help"], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, (command, done.stderr[-2000:])
    done = subprocess.run([sys.executable, "manage.py", "help", "bench"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0 and "Unknown command" in done.stderr  # the site's own commands lack it
