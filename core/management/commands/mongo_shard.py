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
        config = get_client()["config"]
        for collection, key in keys.items():
            namespace = f"{db.name}.{collection}"
            current = (config["collections"].find_one({"_id": namespace, "dropped": {"$ne": True}}) or {}).get("key")
            current = list(dict(current).items()) if current else None
            if current == list(key.items()):
                self.stdout.write(f"already sharded {collection}")
            elif current and current == list(key.items())[:len(current)]:
                # An older release's key is a prefix of this one (`{owner: 1}` -> `{owner: 1, date: 1}`): refined
                # in place, no data moves (MongoDB docs, "Refine a Shard Key"; the new index exists by now).
                admin.command("refineCollectionShardKey", namespace, key=key)
                self.stdout.write(self.style.SUCCESS(f"refined {collection}"))
            elif current:
                admin.command("reshardCollection", namespace, key=key)  # MongoDB 5.0+: rewrites the collection
                self.stdout.write(self.style.SUCCESS(f"resharded {collection}"))
            else:
                admin.command("shardCollection", namespace, key=key)
                self.stdout.write(self.style.SUCCESS(f"sharded {collection}"))
