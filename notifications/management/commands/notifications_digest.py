"""Send the held notification e-mails as digests (run from cron when no Celery worker schedules them)."""

from django.core.management.base import BaseCommand

from notifications.services import email_digests_send_all


class Command(BaseCommand):
    help = "Send every held notification e-mail digest."

    def handle(self, **options):
        sent = email_digests_send_all()
        self.stdout.write(self.style.SUCCESS(f"{sent} digest(s) sent."))
