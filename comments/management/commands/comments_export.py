"""manage.py comments_export [--topic SLUG] [--format jsonl|disqus] [--output FILE]: see
comments.importers.export and docs/import.md."""

import sys

from django.core.management.base import BaseCommand, CommandError

from comments.importers.export import comments_export
from topics.models import Topic


class Command(BaseCommand):
    help = ("Export comments (every topic, or one) as JSON Lines (what comments_import jsonl reads back) or Disqus "
            "XML. No e-mail addresses unless --with-emails.")

    def add_arguments(self, parser):
        parser.add_argument("--topic", help="One topic's slug (default: every topic).")
        parser.add_argument("--format", choices=["jsonl", "disqus"], default="jsonl")
        parser.add_argument("--output", help="File to write (default: standard output).")
        parser.add_argument("--with-emails", action="store_true",
                            help="Include registered authors' e-mail addresses (to match them on another site).")

    def handle(self, *args, **options):
        topics = Topic.objects.order_by("pk")
        if options["topic"]:
            topics = topics.filter(slug=options["topic"])
            if not topics.exists():
                raise CommandError(f"No such topic: {options['topic']}")
        to_file = bool(options["output"])
        out = open(options["output"], "w", encoding="utf-8") if to_file else sys.stdout  # noqa: SIM115
        # Progress goes to stderr when the export itself goes to standard output.
        log = self.stdout if to_file else self.stderr
        try:
            report = comments_export(topics=topics.iterator(), out=out, fmt=options["format"],
                                     with_emails=options["with_emails"], progress=lambda m: log.write(m))
        finally:
            if to_file:
                out.close()
        log.write(self.style.SUCCESS(f"{report.comments} comments of {report.topics} topics exported "
                                     f"({options['format']})."))
