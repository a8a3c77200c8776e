"""Bring stored comments up to date: the html of comments stored before Markdown, the
discussion hints (pinned count, moderated) of discussions stored before them, the order index
(ranks) of array-strategy discussions stored before it, and pending post marks an older version
kept inside embedded discussion documents (see `comments.services.comment_backfill` and
docs/comments.md)."""

from comments.management.topics import TopicsCommand
from comments.services import comment_backfill


class Command(TopicsCommand):
    help = ("Store the rendered html of comments stored before Markdown, recount each discussion's pinned and "
            "moderated hints, write the order index (ranks) of discussions stored before it and move old pending post "
            "marks to where the finisher looks, in every topic or in the topics named by slug, through each topic's "
            "storage strategy. Idempotent; pages render missing html and order unranked discussions on the fly until "
            "it has run.")

    def handle(self, *args, **options):
        report = comment_backfill(topics=self.topics(options), progress=lambda message: self.stdout.write(message))
        self.stdout.write(self.style.SUCCESS(
            f"{report.topics} topic(s), {report.comments} comment(s) checked, {report.rendered} rendered, "
            f"{report.pinned} pinned, {report.ranked} discussion(s) ranked, {report.adopted} pending post mark(s) moved"))
        if report.raced:
            self.stdout.write(self.style.WARNING(
                f"{report.raced} comment(s) were edited while being backfilled and kept the html of their edit."))
