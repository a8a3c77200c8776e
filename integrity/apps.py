from django.apps import AppConfig


class IntegrityConfig(AppConfig):
    """The integrity check as an app: its command (`manage.py integrity`), no models, no URLs."""

    name = "integrity"
    verbose_name = "Integrity"
