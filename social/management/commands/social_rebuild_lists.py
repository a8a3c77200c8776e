"""Bring users' followers/following lists in step with the follow edges (repair after a crash
between an edge write and its list writes; safe while people follow: see
social/services.py, `follow_lists_repair`)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from social.services import follow_lists_repair


class Command(BaseCommand):
    help = "Rebuild the followers and following lists (tbc documents) of the named users from the edges."

    def add_arguments(self, parser):
        parser.add_argument("usernames", nargs="+", help="Users whose lists to rebuild.")

    def handle(self, *args, **options):
        names = options["usernames"]
        users = dict(get_user_model().objects.filter(username__in=names).values_list("username", "id"))
        missing = sorted(set(names) - set(users))
        if missing:
            raise CommandError(f"No such user: {', '.join(missing)}")
        follow_lists_repair(user_ids=users.values())
        self.stdout.write(self.style.SUCCESS(f"Rebuilt the lists of {len(users)} user(s)."))
