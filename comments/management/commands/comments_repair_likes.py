"""Recompute comments' like counts and latest likers from the like edges (the edge and the
counter are two writes, so the counter can drift from the edges; see
`comments.services.comment_likes_repair` and docs/comments.md)."""

from comments.management.topics import TopicsCommand
from comments.services import GAP_GRACE_SECONDS, comment_likes_repair


class Command(TopicsCommand):
    help = ("Recompute every comment's like count and latest likers from the like edges (the source of truth), "
            "in every topic or in the topics named by slug, through each topic's storage strategy.")

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--grace", type=float, default=GAP_GRACE_SECONDS,
                            help="Seconds within which a like or unlike may be in flight: a comment whose like "
                                 f"edges changed more recently is left (default {GAP_GRACE_SECONDS}).")

    def handle(self, *args, **options):
        report = comment_likes_repair(topics=self.topics(options), progress=lambda message: self.stdout.write(message),
                                      grace=options["grace"])
        self.stdout.write(self.style.SUCCESS(
            f"{report.topics} topic(s), {report.comments} comment(s) checked, {report.repaired} repaired"))
        if report.raced:
            self.stdout.write(self.style.WARNING(
                f"{report.raced} comment(s) were liked or unliked while being repaired (or within the grace period) "
                "and were left as they were: "
                "run the command again."))
