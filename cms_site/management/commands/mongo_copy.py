"""Copy the embedded engine's data to a MongoDB server: how a site moves off one machine."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from core.managers import ensure_indexes
from core.mongo import copy_database, get_db, is_embedded, server_database


class Command(BaseCommand):
    help = ("Copy every collection of the embedded engine into a MongoDB server's database (empty collections "
            "only), then create the declared indexes there. Stop the site first; then set MONGODB_URI.")

    def add_arguments(self, parser):
        parser.add_argument("--to", required=True, metavar="URI", help="mongodb:// or mongodb+srv:// URI of the target")
        parser.add_argument("--db", default=None, help="target database (default: MONGODB_DB)")

    def handle(self, *args, **options):
        if not is_embedded():
            raise CommandError("MONGODB_URI is set: this copies the embedded engine's data; unset it to run")
        uri = options["to"]
        if not uri.startswith(("mongodb://", "mongodb+srv://")):
            raise CommandError("--to must be a mongodb:// or mongodb+srv:// URI")
        target = server_database(uri, options["db"] or settings.MONGODB_DB)
        copied = copy_database(get_db(), target, out=self.stdout.write)
        ensure_indexes(target)
        self.stdout.write(self.style.SUCCESS(f"{sum(copied.values())} documents in {len(copied)} collections copied to "
                                             f"{target.name!r}; indexes created. Now set MONGODB_URI and start the site."))
