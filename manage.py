#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""
import os
import sys

# The benchmark harness's commands run with its settings (cms_site/bench_settings.py): the site's, with the
# `bench` app, which the site itself does not install.
BENCH_COMMANDS = ("bench", "bench_load", "bench_scale", "bench_cluster")


def main():
    bench = len(sys.argv) > 1 and sys.argv[1] in BENCH_COMMANDS
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cms_site.bench_settings" if bench else "cms_site.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
