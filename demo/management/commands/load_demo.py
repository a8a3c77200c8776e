from django.core.management.base import BaseCommand

from demo.loader import load_demo


class Command(BaseCommand):
    help = "Load demo people, topics, comments and follows (idempotent)."

    def handle(self, *args, **options):
        load_demo(out=lambda line: self.stdout.write(f"  {line}", ending="\n") or self.stdout.flush())
        self.stdout.write(self.style.SUCCESS("Demo content ready."))
