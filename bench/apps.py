from django.apps import AppConfig


class BenchConfig(AppConfig):
    """The benchmark harness as an app: its command (`manage.py bench`), no models, no URLs."""

    name = "bench"
    verbose_name = "Benchmarks"
