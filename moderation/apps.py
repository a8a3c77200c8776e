from django.apps import AppConfig


class ModerationConfig(AppConfig):
    name = "moderation"
    verbose_name = "Moderation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from comments.services import register_submission_gate
        from comments.signals import comment_edited, comment_posted, comment_status_changed
        from core.writers import register_write_check
        from moderation import receivers, services, spam

        register_write_check("moderation.bans", services.user_write_check)
        # The spam checks run first: a rejected comment never reaches the queue.
        register_submission_gate("moderation.spam", spam.SpamGate())
        register_submission_gate("moderation.premoderation", services.PreModerationGate())
        comment_edited.connect(receivers.on_comment_edited, dispatch_uid="moderation.edited")
        comment_posted.connect(spam.on_comment_posted, dispatch_uid="moderation.spam_fingerprint")
        comment_edited.connect(spam.on_comment_edited, dispatch_uid="moderation.spam_fingerprint_edit")
        comment_status_changed.connect(receivers.on_comment_status_changed, dispatch_uid="moderation.status_changed")
