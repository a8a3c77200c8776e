"""manage.py integrity [--repair] [--topic SLUG ...] [--batch N]: see cms_site/integrity.py and
docs/deploy.md ("Integrity")."""

from django.core.management.base import BaseCommand, CommandError

from cms_site.integrity import CHECKS, integrity
from topics.models import Topic


class Command(BaseCommand):
    help = ("Check derived views against their source of truth (per topic: discussion counter and seq, likes and "
            "latest likers, the search entries; per user: follow lists and counts, notification unread counters), "
            "print what differs, and with --repair rebuild it. Exits with status 1 while differences remain.")

    def add_arguments(self, parser):
        parser.add_argument("--repair", action="store_true", help="Rebuild what drifted.")
        parser.add_argument("--topic", action="append", dest="slugs", default=[], metavar="SLUG",
                            help="Check only this topic (repeatable); per-user checks are then skipped.")
        parser.add_argument("--batch", type=int, default=500, help="Comments per page and users per batch (default 500).")

    def handle(self, *args, **options):
        slugs, batch = options["slugs"], options["batch"]
        if batch < 1:
            raise CommandError("--batch must be at least 1.")
        topics = Topic.objects.order_by("pk")
        if slugs:
            topics = topics.filter(slug__in=slugs)
            missing = sorted(set(slugs) - set(topics.values_list("slug", flat=True)))
            if missing:
                raise CommandError(f"No such topic: {', '.join(missing)}")
        report = integrity(topics=topics.iterator(chunk_size=batch), users=not slugs, repair=options["repair"],
                           batch=batch, say=self.stdout.write)
        checked = ", ".join(f"{report.checked[k]} {k}" for k in ("topics", "comments", "users"))
        drifted = ", ".join(f"{check}: {report.drifted[check]}" for check in CHECKS)
        self.stdout.write(f"checked {checked}; differences {drifted}")
        if options["repair"]:
            self.stdout.write(f"repaired {', '.join(f'{c}: {report.repaired[c]}' for c in CHECKS)}")
        line = f"{report.remaining} difference(s)" + (" remain" if options["repair"] else "")
        if report.remaining:
            raise CommandError(line)
        self.stdout.write(self.style.SUCCESS(line))
