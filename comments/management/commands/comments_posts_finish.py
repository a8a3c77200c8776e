"""Finish the posts and likes left pending past their grace: what follows a post (search entry,
feed activity, notifications) or a first like (its notification) is sent again for each, as the
`comments.posts_finish` task does on Celery beat. Run it every minute from cron without beat.
Idempotent: the tasks are keyed by the comment (the like).
"""

from django.core.management.base import BaseCommand, CommandError

from comments.services import GAP_GRACE_SECONDS, comment_likes_finish_due, comment_posts_finish_due


class Command(BaseCommand):
    help = ("Send again what follows every post and like left pending (the broker refused, the process died) past "
            "--grace.")

    def add_arguments(self, parser):
        parser.add_argument("--grace", type=float, default=GAP_GRACE_SECONDS,
                            help=f"Only posts older than this many seconds (default {GAP_GRACE_SECONDS}): a younger "
                                 "one may still be in flight.")

    def handle(self, *args, grace, **options):
        if grace < 0:
            raise CommandError("--grace must not be negative.")
        posts = comment_posts_finish_due(older_than=grace)
        likes = comment_likes_finish_due(older_than=grace)
        self.stdout.write(self.style.SUCCESS(f"comments_posts_finish: {posts} pending post(s), {likes} pending "
                                             "like(s) finished"))
