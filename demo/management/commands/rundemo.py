"""Load the demo content and serve the site in this same process.

The embedded MongoDB engine lives in process memory, so the content must be loaded
by the process that serves it: this command loads, then runs Django's development
server without the autoreloader (which would fork a fresh, empty process).

With DEBUG off (`make run` against a MongoDB server, or `.venv/bin/python manage.py rundemo`
after `make run`, which reads the site's `.secret_key`) it first collects the static files as
`make serve` does: pages name them by the manifest `collectstatic` writes (Django's
ManifestStaticFilesStorage raises for a file it does not list), and WhiteNoise serves them
from STATIC_ROOT, since the development server serves static files only in DEBUG.
"""

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from core.managers import ensure_indexes
from core.mongo import is_embedded
from demo.loader import load_demo


class Command(BaseCommand):
    help = "Load demo content, then serve the site (development server, no autoreload)."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")

    def handle(self, *args, **options):
        engine = "MongoDB at MONGODB_URI"
        if is_embedded():
            engine = (f"embedded (docstore), kept in {settings.MONGODB_EMBEDDED_PATH}" if settings.MONGODB_EMBEDDED_PATH
                      else "embedded (docstore), in a temporary directory: nothing is kept after exit")
        self.stdout.write(f"MongoDB engine: {engine}")
        if not settings.DEBUG:
            self.stdout.write(f"DEBUG is off: collecting static files into {settings.STATIC_ROOT}")
            call_command("collectstatic", interactive=False, verbosity=0)
        ensure_indexes()
        self.stdout.write("Loading demo content…")
        load_demo(out=lambda line: (self.stdout.write(f"  {line}"), self.stdout.flush()))
        self.stdout.write(self.style.SUCCESS("Demo ready. Log in as editor / alice … with password 'commons-demo'."))
        call_command("runserver", options["addrport"], use_reloader=False)
