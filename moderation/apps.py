from django.apps import AppConfig


class ModerationConfig(AppConfig):
    name = "moderation"
    verbose_name = "Moderation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from comments.services import register_submission_gate
        from comments.signals import comment_edited, comment_posted, comment_status_changed
        from core.writers import register_write_check
        from moderation import receivers, selectors, services, spam

        register_write_check("moderation.bans", services.user_write_check)
        from comments.viewers import register_held_reader, register_shadow_lister

        register_held_reader("moderation.held", selectors.own_held_comment)
        register_shadow_lister("moderation.shadow", selectors.own_shadow_held_comments)
        from accounts.parts import register_account_part

        # After the comments (whose erasure has reached the queue rows by then).
        register_account_part("moderation", order=15, export=lambda user: selectors.account_export(user=user),
                              erase=lambda *, user, comments: services.user_forget(user=user))
        # The spam checks run first: a rejected comment never reaches the queue.
        register_submission_gate("moderation.spam", spam.SpamGate())
        register_submission_gate("moderation.premoderation", services.PreModerationGate())
        comment_edited.connect(receivers.on_comment_edited, dispatch_uid="moderation.edited")
        comment_posted.connect(receivers.on_comment_posted_fingerprint, dispatch_uid="moderation.spam_fingerprint")
        comment_edited.connect(receivers.on_comment_edited_fingerprint, dispatch_uid="moderation.spam_fingerprint_edit")
        comment_status_changed.connect(receivers.on_comment_status_changed, dispatch_uid="moderation.status_changed")
