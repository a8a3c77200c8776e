"""Create every MongoDB index the managers declare. Idempotent."""

from django.core.management.base import BaseCommand

from cms_site.managers import declared_indexes
from cms_site.mongo import get_db


class Command(BaseCommand):
    help = "Create every index declared by the MongoDB managers (safe to run again)."

    def add_arguments(self, parser):
        parser.add_argument("--list", action="store_true", help="Only list the declared indexes.")

    def handle(self, *args, **options):
        db = get_db()
        declared = declared_indexes()
        total = 0
        for collection, models in declared.items():
            existing = set() if options["list"] else set(db[collection].index_information())
            for model in models:
                spec = model.document
                keys = ", ".join(f"{k}: {v}" for k, v in spec["key"].items())
                flags = " ".join(f for f in ("unique", "sparse") if spec.get(f))
                if "expireAfterSeconds" in spec:
                    flags += f" ttl={spec['expireAfterSeconds']}s"
                if "partialFilterExpression" in spec:
                    flags += " partial"
                if options["list"]:
                    state = "declared"
                else:
                    state = "exists " if spec["name"] in existing else "created"
                self.stdout.write(f"{state}  {collection}.{spec['name']}  {{{keys}}} {flags}".rstrip())
                total += 1
            if not options["list"]:
                db[collection].create_indexes(models)
        verb = "declared" if options["list"] else "ensured"
        self.stdout.write(self.style.SUCCESS(f"{total} indexes {verb} on {len(declared)} collections in {db.name!r}."))
