"""Bring stored comments up to date: the html of comments stored before Markdown, and the
discussion hints (pinned count, moderated) of discussions stored before them (see
`comments.services.comment_backfill` and docs/comments.md)."""

from comments.management.topics import TopicsCommand
from comments.services import comment_backfill


class Command(TopicsCommand):
    help = ("Store the rendered html of comments stored before Markdown and recount each discussion's pinned and "
            "moderated hints, in every topic or in the topics named by slug, through each topic's storage strategy. "
            "Idempotent; pages render missing html on the fly until it has run.")

    def handle(self, *args, **options):
        report = comment_backfill(topics=self.topics(options), progress=lambda message: self.stdout.write(message))
        self.stdout.write(self.style.SUCCESS(
            f"{report.topics} topic(s), {report.comments} comment(s) checked, {report.rendered} rendered, "
            f"{report.pinned} pinned"))
        if report.raced:
            self.stdout.write(self.style.WARNING(
                f"{report.raced} comment(s) were edited while being backfilled and kept the html of their edit."))
