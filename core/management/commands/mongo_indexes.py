"""Make the MongoDB indexes what the managers declare. Idempotent on any existing store."""

from collections import Counter

from django.core.management.base import BaseCommand

from core.managers import declared_indexes, ensure_indexes, index_definition
from core.mongo import get_db


class Command(BaseCommand):
    help = ("Create every index declared by the MongoDB managers; rebuild one whose keys or options changed "
            "under the same name; with --prune drop indexes no manager declares (safe to run again).")

    def add_arguments(self, parser):
        parser.add_argument("--list", action="store_true", help="Only list the declared indexes.")
        parser.add_argument("--prune", action="store_true",
                            help="Drop indexes no manager declares any more (never _id_).")

    def handle(self, *args, **options):
        db = get_db()
        if options["list"]:
            declared = declared_indexes()
            total = 0
            for collection, models in declared.items():
                for model in models:
                    pattern, flags = index_definition(model.document)
                    keys = ", ".join(f"{field}: {direction}" for field, direction in pattern)
                    extra = "".join(f" {k}={v}" for k, v in sorted(flags.items()))
                    self.stdout.write(f"declared   {collection}.{model.document['name']}  {{{keys}}}{extra}")
                    total += 1
            self.stdout.write(self.style.SUCCESS(f"{total} indexes declared on {len(declared)} collections."))
            return

        def progress(action):
            line = action.line()
            if action.action in ("rebuilt", "replaced", "dropped"):
                line = self.style.WARNING(line)
            self.stdout.write(line)
            self.stdout.flush()

        actions = ensure_indexes(db, prune=options["prune"], out=progress)
        counts = Counter(action.action for action in actions)
        order = ("exists", "created", "rebuilt", "replaced", "dropped", "kept", "undeclared")
        summary = ", ".join(f"{counts[a]} {a}" for a in order if counts[a])
        collections = len({action.collection for action in actions})
        self.stdout.write(self.style.SUCCESS(f"Indexes of {db.name!r} on {collections} collections: {summary or 'none'}."))
