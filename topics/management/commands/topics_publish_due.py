"""Announce scheduled topics whose time has come (their followers' `publish` activity).

Idempotent and safe to run concurrently (each topic is claimed by a conditional UPDATE);
run it every minute from cron or a systemd timer, or let Celery beat call the task. The
site never shows a topic early or late because of it: pages filter on publish_at.
"""

from django.core.management.base import BaseCommand

from topics.services import topic_publish_due


class Command(BaseCommand):
    help = "Send the publish activity of every topic that is live but not yet announced (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--limit", type=int, default=500, help="At most this many topics per batch (default 500).")

    def handle(self, *args, limit, **options):
        total = 0
        while True:
            done = topic_publish_due(limit=limit)
            total += done
            if done:
                self.stdout.write(f"announced {done} topic(s) ...")
            if done < limit:
                break
        self.stdout.write(self.style.SUCCESS(f"topics_publish_due: {total} topic(s) announced"))
