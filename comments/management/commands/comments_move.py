"""Move a topic's discussion to another storage strategy while it stays open (comments/moves.py
documents the protocol; docs/mongodb.md "Moving a discussion" how to run it). `comments_migrate`
is the same command under its former name."""

from django.core.management.base import BaseCommand, CommandError

from comments.managers import STRATEGIES
from comments.moves import comment_storage_move, move_abort, move_status
from core.errors import ServiceError
from topics.models import Topic


class Command(BaseCommand):
    help = ("Move a topic's comments to another storage strategy (document, bucketed, embedded) while people keep "
            "posting, reading and liking: a batch copy, a replay of what changed meanwhile, then one switch. Run it "
            "again to resume a move that stopped; --abort gives up a move that has not switched.")

    def add_arguments(self, parser):
        parser.add_argument("slug", help="The topic whose discussion moves.")
        parser.add_argument("--to", choices=sorted(STRATEGIES), help="The storage strategy to move to.")
        parser.add_argument("--batch", type=int, default=None, help="Comments per copied batch (COMMENTS_MIGRATE_BATCH).")
        parser.add_argument("--abort", action="store_true", help="Give up the move under way; the topic stays where it was.")
        parser.add_argument("--status", action="store_true", help="Show the state of the topic's move and change nothing.")

    def handle(self, *args, slug, to, batch, abort, status, **options):
        topic = Topic.objects.filter(slug=slug).first()
        if topic is None:
            raise CommandError(f"No such topic: {slug}")
        if status:
            state = move_status(topic=topic)
            self.stdout.write(f"{slug}: {topic.comment_storage}" + (
                f"; move {state['source']} -> {state['target']}: {state['state']}, copied up to #{state['copied']}"
                if state else "; never moved"))
            return
        if abort:
            if not move_abort(topic=topic):
                raise CommandError(f"{slug}: no move to abort (none under way, or it has switched: run it again).")
            self.stdout.write(self.style.SUCCESS(f"{slug}: move aborted; it stays {topic.comment_storage}"))
            return
        if not to:
            raise CommandError("--to is required (document, bucketed or embedded).")
        if batch is not None and batch < 1:
            raise CommandError("--batch must be at least 1.")
        try:
            report = comment_storage_move(topic=topic, to=to, batch=batch,
                                             progress=lambda message: self.stdout.write(message))
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(self.style.SUCCESS(
            f"{slug}: {report.source} -> {report.target}: {report.copied} copied, {report.replayed} replayed "
            f"in {report.seconds:.1f} s" + (f" (resumed from {report.resumed_from})" if report.resumed_from else "")))
