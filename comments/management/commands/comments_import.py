"""manage.py comments_import FORMAT SOURCE [--dry-run]: see comments.importers.service and docs/import.md."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from comments.importers.formats import READERS
from comments.importers.service import ImportFailed, comments_import
from comments.moves import DiscussionMoving
from core.errors import InvalidInput
from topics.models import CommentOrder, CommentStorage


class Command(BaseCommand):
    help = ("Import comments from Disqus (XML export), WordPress (WXR), django-comments(-xtd) (dumpdata JSON or "
            "--database ALIAS), Remark42 (backup), Isso (SQLite) or our own JSON Lines export. Idempotent and "
            "resumable: run it again to complete an interrupted import; nothing is imported twice.")

    def add_arguments(self, parser):
        parser.add_argument("format", choices=sorted(READERS))
        parser.add_argument("source", nargs="?", help="The file (not needed with --database).")
        parser.add_argument("--dry-run", action="store_true", help="Read and check everything, write nothing.")
        parser.add_argument("--database", help="xtd only: read the comment tables of this Django database alias.")
        parser.add_argument("--editor", help="Staff user who authors the draft topics created for unmatched threads "
                                             "(default: the first active superuser).")
        parser.add_argument("--storage", choices=[c.value for c in CommentStorage], default=CommentStorage.DOCUMENT,
                            help="Comment storage of created topics (default: document).")
        parser.add_argument("--order", choices=[c.value for c in CommentOrder],
                            help="Comment order of created topics (default: threaded; chronological for bucketed).")
        parser.add_argument("--every", type=int, default=1000, help="A progress line every N comments (0: none).")

    def handle(self, *args, **options):
        fmt, source = options["format"], options["source"]
        if options["database"] and fmt != "xtd":
            raise CommandError("--database is for the xtd format only.")
        if not source and not options["database"]:
            raise CommandError("SOURCE is required (or --database ALIAS for xtd).")
        editor = self._editor(options["editor"])
        try:
            report = comments_import(fmt=fmt, source=source, editor=editor, storage=options["storage"],
                                     order=options["order"], dry_run=options["dry_run"], database=options["database"],
                                     every=max(0, options["every"]), progress=lambda m: self.stdout.write(m))
        except DiscussionMoving as exc:
            raise CommandError(f"{exc} Run the import again once the move is done (comments_move SLUG --status): "
                               "what was imported stays, nothing is imported twice.") from None
        except ImportFailed as exc:
            raise CommandError(f"{source or options['database']}: {exc}. Nothing was imported.") from None
        except (InvalidInput, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
            raise CommandError(str(exc)) from None
        for position, message in report.problems:
            self.stdout.write(self.style.WARNING(f"  {position}: {message}"))
        for position, message in report.warnings:
            self.stdout.write(f"  {position}: {message}")
        verb = "would be imported" if report.dry_run else "imported"
        self.stdout.write(self.style.SUCCESS(
            f"{report.read} comments read in {report.threads} threads; {report.imported} {verb}, {report.already} "
            f"already imported, {report.duplicates} duplicate ids, {report.skipped} skipped; topics: "
            f"{report.topics_matched} matched, {report.topics_created} {'to create' if report.dry_run else 'created as drafts'}; "
            f"authors: {report.matched_authors} matched to users, {report.guests} guests."))

    @staticmethod
    def _editor(username):
        User = get_user_model()
        if username:
            user = User.objects.filter(username=username, is_active=True, is_staff=True).first()
            if user is None:
                raise CommandError(f"No active staff user {username!r}.")
            return user
        return User.objects.filter(is_active=True, is_superuser=True).order_by("pk").first()
