"""Replay the deliveries that failed for good (see background/models.py)."""

from django.core.management.base import BaseCommand

from background.services import failure_replay, failures_pending


class Command(BaseCommand):
    help = "Run again every failed delivery not yet replayed (tasks are idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--task", default="", help="only failures of this task name")
        parser.add_argument("--limit", type=int, default=0, help="at most this many (0: all)")

    def handle(self, *, task, limit, **options):
        pending = failures_pending()
        if task:
            pending = pending.filter(task=task)
        if limit > 0:
            pending = pending[:limit]
        total = pending.count()
        ok = failed = 0
        for n, failure in enumerate(pending.iterator(), start=1):
            if failure_replay(failure=failure):
                ok += 1
            else:
                failed += 1
                self.stderr.write(f"  {failure}: {failure.replay_error}")
            if n % 100 == 0 or n == total:
                self.stdout.write(f"{n}/{total} replayed ({ok} ok, {failed} failed)")
        self.stdout.write(self.style.SUCCESS(f"Done: {ok} replayed, {failed} still failing."))
