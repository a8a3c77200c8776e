"""Apply the declared shard keys on a sharded cluster (connect MONGODB_URI to a mongos)."""

from django.core.management.base import BaseCommand, CommandError

from core.managers import declared_shard_keys, ensure_indexes
from core.mongo import get_client, get_db, is_embedded


class Command(BaseCommand):
    help = "Enable sharding for MONGODB_DB and shard every collection on its declared key (mongos only)."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Print the shard keys without applying them.")

    def handle(self, *args, **options):
        keys = declared_shard_keys()
        db = get_db()
        for collection, key in keys.items():
            self.stdout.write(f"{db.name}.{collection}: {key}")
        if options["dry_run"]:
            return
        if is_embedded():
            raise CommandError("The embedded engine cannot shard; set MONGODB_URI to a mongos.")
        admin = get_client().admin
        if admin.command("hello").get("msg") != "isdbgrid":
            raise CommandError("MONGODB_URI does not point at a mongos; nothing sharded.")
        admin.command("enableSharding", db.name)
        # A collection that holds data can only be sharded on a key some index supports: create
        # every declared index first (each shard key has one; tests/contract/test_shard_targeting.py).
        # ensure_indexes compares with listIndexes first: a changed index is rebuilt, never a conflict.
        ensure_indexes(db, out=lambda action: self.stdout.write(f"index {action.line()}"))
        for collection, key in keys.items():
            admin.command("shardCollection", f"{db.name}.{collection}", key=key)
            self.stdout.write(self.style.SUCCESS(f"sharded {collection}"))
