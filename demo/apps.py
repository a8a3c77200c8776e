from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo content as an app: its commands (`manage.py load_demo`, `manage.py rundemo`), no
    models, no URLs."""

    name = "demo"
    verbose_name = "Demo content"
