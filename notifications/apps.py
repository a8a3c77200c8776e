from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"
    verbose_name = "Notifications"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from accounts.parts import register_account_part
        from comments import signals as comment_signals
        from notifications import receivers, selectors, services, signals
        from social.signals import user_followed

        register_account_part("notifications", order=30, export=lambda user: selectors.account_export(user=user),
                              erase=lambda *, user, comments: services.user_forget(user=user))

        comment_signals.comment_posted.connect(receivers.on_comment_posted, dispatch_uid="notifications.comment_posted")
        comment_signals.comment_liked.connect(receivers.on_comment_liked, dispatch_uid="notifications.comment_liked")
        # A deletion also sends comment_status_changed (status "deleted"): that one receiver covers both.
        comment_signals.comment_status_changed.connect(receivers.on_comment_status_changed,
                                                       dispatch_uid="notifications.status_changed")
        user_followed.connect(receivers.on_user_followed, dispatch_uid="notifications.user_followed")
        signals.digest_held.connect(receivers.on_digest_held, dispatch_uid="notifications.digest_held")
        signals.email_due.connect(receivers.on_email_due, dispatch_uid="notifications.email_due")
