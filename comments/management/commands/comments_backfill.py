"""Bring stored comments up to date: the html of comments stored before Markdown, and the
discussion hints (pinned count, moderated) of discussions stored before them (see
`comments.services.comment_backfill` and docs/comments.md)."""

from django.core.management.base import BaseCommand, CommandError

from comments.services import comment_backfill
from topics.models import Topic


class Command(BaseCommand):
    help = ("Store the rendered html of comments stored before Markdown and recount each discussion's pinned and "
            "moderated hints, in every topic or in the topics named by slug, through each topic's storage strategy. "
            "Idempotent; pages render missing html on the fly until it has run.")

    def add_arguments(self, parser):
        parser.add_argument("slugs", nargs="*", help="Topics to backfill (default: every topic).")

    def handle(self, *args, **options):
        slugs = options["slugs"]
        topics = Topic.objects.order_by("pk")
        if slugs:
            topics = topics.filter(slug__in=slugs)
            missing = sorted(set(slugs) - set(topics.values_list("slug", flat=True)))
            if missing:
                raise CommandError(f"No such topic: {', '.join(missing)}")
        report = comment_backfill(topics=topics.iterator(), progress=lambda message: self.stdout.write(message))
        self.stdout.write(self.style.SUCCESS(
            f"{report.topics} topic(s), {report.comments} comment(s) checked, {report.rendered} rendered, "
            f"{report.pinned} pinned"))
        if report.raced:
            self.stdout.write(self.style.WARNING(
                f"{report.raced} comment(s) were edited while being backfilled and kept the html of their edit."))
