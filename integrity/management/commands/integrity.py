"""manage.py integrity [--repair] [--topic SLUG ...] [--user USERNAME ...] [--batch N] [--grace SECONDS]:
see integrity/services.py and docs/deploy.md ("Integrity")."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from comments.services import GAP_GRACE_SECONDS
from integrity.services import CHECKS, integrity
from topics.models import Topic


class Command(BaseCommand):
    help = ("Check derived views against their source of truth (per topic: discussion counter and seq, likes and "
            "latest likers, the search entries, the ranks and their authors, the commenter pairs; per user: follow lists and "
            "counts, pushed feeds, notification groups "
            "and unread counters; the moderation totals and credit flows), print what differs, and with --repair "
            "rebuild it. Exits with status 1 while differences remain.")

    def add_arguments(self, parser):
        parser.add_argument("--repair", action="store_true", help="Rebuild what drifted.")
        parser.add_argument("--topic", action="append", dest="slugs", default=[], metavar="SLUG",
                            help="Check only this topic (repeatable); per-user checks then run only for --user.")
        parser.add_argument("--user", action="append", dest="usernames", default=[], metavar="USERNAME",
                            help="Check only this user (repeatable); per-topic checks then run only for --topic.")
        parser.add_argument("--batch", type=int, default=500, help="Comments per page and users per batch (default 500).")
        parser.add_argument("--grace", type=float, default=GAP_GRACE_SECONDS,
                            help="Seconds within which a number without a comment may be a post in flight: not "
                                 f"filled by --repair (default {GAP_GRACE_SECONDS}).")

    def handle(self, *args, **options):
        slugs, usernames, batch = options["slugs"], options["usernames"], options["batch"]
        if batch < 1:
            raise CommandError("--batch must be at least 1.")
        if options["grace"] < 0:
            raise CommandError("--grace must not be negative.")
        topics = Topic.objects.order_by("pk")
        if slugs:
            topics = topics.filter(slug__in=slugs)
            missing = sorted(set(slugs) - set(topics.values_list("slug", flat=True)))
            if missing:
                raise CommandError(f"No such topic: {', '.join(missing)}")
        elif usernames:
            topics = topics.none()
        users = True
        if usernames:
            found = dict(get_user_model().objects.filter(username__in=usernames).values_list("username", "pk"))
            missing = sorted(set(usernames) - set(found))
            if missing:
                raise CommandError(f"No such user: {', '.join(missing)}")
            users = sorted(found.values())
        elif slugs:
            users = False
        everything = not slugs and not usernames  # then the site-wide checks too (credits, moderation totals)
        report = integrity(topics=None if everything else topics.iterator(chunk_size=batch), users=users,
                           repair=options["repair"], batch=batch, say=self.stdout.write, grace=options["grace"])
        checked = ", ".join(f"{report.checked[k]} {k}" for k in ("topics", "comments", "users"))
        drifted = ", ".join(f"{check}: {report.drifted[check]}" for check in CHECKS)
        self.stdout.write(f"checked {checked}; differences {drifted}")
        if options["repair"]:
            self.stdout.write(f"repaired {', '.join(f'{c}: {report.repaired[c]}' for c in CHECKS)}")
        line = f"{report.remaining} difference(s)" + (" remain" if options["repair"] else "")
        if report.remaining:
            raise CommandError(line)
        self.stdout.write(self.style.SUCCESS(line))
