"""Finish moderation writes an interruption left half done (docs/moderation.md)."""

from django.core.management.base import BaseCommand

from moderation.services import moderation_repair


class Command(BaseCommand):
    help = ("Finish the moderation actions left `syncing` (interrupted between their writes): each is run again as it "
            "was recorded; an entry without what that needs takes its comment's stored status, an approval goes back "
            "to pending; --recount recomputes flag counters and tab totals; --statuses re-reads every entry of "
            "the comment status index from storage.")

    def add_arguments(self, parser):
        parser.add_argument("--recount", action="store_true")
        parser.add_argument("--statuses", action="store_true")

    def handle(self, *args, **options):
        report = moderation_repair(recount=options["recount"], statuses=options["statuses"],
                                   progress=lambda message: self.stdout.write(message))
        self.stdout.write(self.style.SUCCESS(
            f"finished {report.finished}, synced {report.synced}, reopened {report.reopened}, recounted {report.recounted}, "
            f"statuses {report.statuses}"))
