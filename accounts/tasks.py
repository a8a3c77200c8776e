"""Background work of the accounts app (ids in; idempotent, retried by `DeliveryTask`)."""

from celery import shared_task

from background.tasks import DeliveryTask


@shared_task(base=DeliveryTask, name="accounts.tokens_revoke")
def accounts_tokens_revoke(user_id: int) -> int:
    """Delete the API tokens of a user whose password changed (accounts.services.user_tokens_revoke)."""
    from django.contrib.auth import get_user_model

    from accounts.services import user_tokens_revoke

    user = get_user_model().objects.filter(pk=int(user_id)).first()
    return user_tokens_revoke(user=user) if user is not None else 0
