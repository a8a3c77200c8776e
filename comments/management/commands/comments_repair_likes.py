"""Recompute comments' like counts and latest likers from the like edges (audit 15; see
`comments.services.comment_likes_repair` and docs/comments.md)."""

from django.core.management.base import BaseCommand, CommandError

from comments.services import comment_likes_repair
from topics.models import Topic


class Command(BaseCommand):
    help = ("Recompute every comment's like count and latest likers from the like edges (the source of truth), "
            "in every topic or in the topics named by slug, through each topic's storage strategy.")

    def add_arguments(self, parser):
        parser.add_argument("slugs", nargs="*", help="Topics to repair (default: every topic).")

    def handle(self, *args, **options):
        slugs = options["slugs"]
        topics = Topic.objects.order_by("pk")
        if slugs:
            topics = topics.filter(slug__in=slugs)
            missing = sorted(set(slugs) - set(topics.values_list("slug", flat=True)))
            if missing:
                raise CommandError(f"No such topic: {', '.join(missing)}")
        report = comment_likes_repair(topics=topics.iterator(), progress=lambda message: self.stdout.write(message))
        self.stdout.write(self.style.SUCCESS(
            f"{report.topics} topic(s), {report.comments} comment(s) checked, {report.repaired} repaired"))
        if report.raced:
            self.stdout.write(self.style.WARNING(
                f"{report.raced} comment(s) were liked or unliked while being repaired and were left as they were: "
                "run the command again."))
