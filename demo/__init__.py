"""The demo content of `make run` and `make serve` (`manage.py load_demo`, `manage.py rundemo`):
the people (loader.py), then each app's own `demo.py` in order. No app imports it."""
