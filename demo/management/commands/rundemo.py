"""Load the demo content and serve the site in this same process.

The embedded MongoDB engine lives in process memory, so the content must be loaded
by the process that serves it: this command loads, then runs Django's development
server without the autoreloader (which would fork a fresh, empty process).
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
        ensure_indexes()
        self.stdout.write("Loading demo content…")
        load_demo(out=lambda line: (self.stdout.write(f"  {line}"), self.stdout.flush()))
        self.stdout.write(self.style.SUCCESS("Demo ready. Log in as editor / alice … with password 'commons-demo'."))
        call_command("runserver", options["addrport"], use_reloader=False)
