"""Background work of the accounts app: account e-mails (ids and rendered messages in; retried
by `DeliveryTask` while the mail server refuses or times out, then recorded for replay)."""

import smtplib

from celery import shared_task

from accounts import services
from background.tasks import TRANSIENT, DeliveryTask


@shared_task(base=DeliveryTask, name="accounts.email_send", autoretry_for=(*TRANSIENT, smtplib.SMTPException))
def email_send(message: dict) -> bool:
    return services.account_email_send(message=message)
