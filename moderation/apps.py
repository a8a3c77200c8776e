from django.apps import AppConfig


class ModerationConfig(AppConfig):
    name = "moderation"
    verbose_name = "Moderation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from cms_site.writers import register_write_check
        from comments.services import register_submission_gate
        from comments.signals import comment_edited, comment_status_changed
        from moderation import receivers, services

        register_write_check("moderation.bans", services.user_write_check)
        register_submission_gate("moderation.premoderation", services.PreModerationGate())
        comment_edited.connect(receivers.on_comment_edited, dispatch_uid="moderation.edited")
        comment_status_changed.connect(receivers.on_comment_status_changed, dispatch_uid="moderation.status_changed")
