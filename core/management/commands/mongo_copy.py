"""Copy every collection and index of the current engine to another, resumably, then verify the copy.

How a site moves from the embedded engine to MongoDB, or backs its embedded store up into another
file (docs/deploy.md, "Moving from the embedded engine to MongoDB"). The rules: core/copy.py.
"""

import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from core.copy import BATCH, copy_database, plan_copy, verify_database
from core.error_reports import mask_secrets
from core.mongo import close_target, get_db, is_current, is_embedded, target_database, target_exists


class Command(BaseCommand):
    help = ("Copy every collection (in _id order, in batches) and every index of the current engine (the embedded "
            "store, or MONGODB_URI's server) into --to: a mongodb:// URI or docstore:PATH (another embedded store). "
            "Resumable: run it again after an interruption and it copies only what is missing. Ends by comparing "
            "each collection's count and SHA-256 of its documents, source against target: exit status 1 when they "
            "differ. Stop writes first (docs/deploy.md).")

    def add_arguments(self, parser):
        parser.add_argument("--to", required=True, metavar="TARGET",
                            help="mongodb://..., mongodb+srv://... or docstore:PATH (an embedded store's file)")
        parser.add_argument("--db", default=None, help="target database (default: MONGODB_DB)")
        parser.add_argument("--batch", type=int, default=BATCH, help=f"documents per batch (default {BATCH})")
        parser.add_argument("--dry-run", action="store_true",
                            help="list each collection's documents (source, already in the target) and the indexes "
                                 "to create; write nothing")

    def handle(self, *args, **options):
        target_spec, name = options["to"], options["db"] or settings.MONGODB_DB
        if not 1 <= options["batch"] <= 100_000:
            raise CommandError("--batch must be between 1 and 100000")
        if is_current(target_spec, name):
            raise CommandError("--to names the database this site uses: nothing to copy")
        where = mask_secrets(target_spec)
        source = get_db()
        origin = (f"the embedded engine ({settings.MONGODB_EMBEDDED_PATH or 'a temporary store'})" if is_embedded()
                  else f"the MongoDB server {mask_secrets(settings.MONGODB_URI)}")
        self.stdout.write(f"from {origin}, database {settings.MONGODB_DB!r}, to {where}, database {name!r}")
        try:
            if options["dry_run"]:
                self._dry_run(source, target_spec, name)
                return
            try:
                target = target_database(target_spec, name)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            began = time.perf_counter()
            results = copy_database(source, target, batch=options["batch"], out=self._line)
            copied = time.perf_counter() - began
            checks = verify_database(source, target, batch=options["batch"], out=self._line)
            total = time.perf_counter() - began
        finally:
            close_target(target_spec, name)
        documents = sum(c.source_count for c in checks)
        differing = [c for c in checks if not c.ok]
        timing = f"copy {copied:.1f} s, verification {total - copied:.1f} s"
        if differing:
            raise CommandError(
                f"the copy differs from the source in {len(differing)} collection(s): "
                + "; ".join(c.line() for c in differing)
                + ". Writes reached the source during the copy, or the target held other data: stop writes and run "
                  "mongo_copy again (it adds what is missing), or copy into an empty target.")
        self.stdout.write(self.style.SUCCESS(
            f"{sum(r.copied for r in results)} documents copied now, {documents} in {len(checks)} collections verified "
            f"(counts and SHA-256 of every document in _id order), indexes included; {timing}."))

    def _line(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()

    def _dry_run(self, source, target_spec, name):
        exists = target_exists(target_spec)
        try:
            target = target_database(target_spec, name) if exists else None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        planned = plan_copy(source, target, exists)
        for p in planned:
            self.stdout.write(f"would copy {p.name}: {p.source_count} documents ({p.target_count} already in the target); "
                              f"indexes to create: {', '.join(p.missing_indexes) or 'none'}")
        self.stdout.write(self.style.SUCCESS(
            f"dry run: {sum(p.source_count for p in planned)} documents in {len(planned)} collections"
            + ("" if exists else "; the target file does not exist yet") + ". Nothing written."))

