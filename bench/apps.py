from django.apps import AppConfig


class BenchConfig(AppConfig):
    """The benchmark harness as an app of cms_site/bench_settings.py (not of the site's settings): its commands
    (`manage.py bench`, `bench_load`, `bench_scale`), no models, no URLs."""

    name = "bench"
    verbose_name = "Benchmarks"
