from django.apps import AppConfig


class SocialConfig(AppConfig):
    name = "social"
    verbose_name = "Social graph and feeds"

    def ready(self):
        from comments import viewers
        from comments.signals import comment_posted, comment_status_changed, comments_imported
        from social import receivers, selectors, signals
        from topics.signals import topic_published

        viewers.register_muted_ids("social.mutes", lambda user: selectors.muted_ids(user=user))
        viewers.register_followed_ids("social.following", lambda user: selectors.following_ids(user=user))

        from accounts.parts import register_account_part
        from social import services

        register_account_part("social", order=20, export=lambda user: {"follows": selectors.follow_names(user=user)},
                              erase=lambda *, user, comments: services.user_forget(user=user))

        topic_published.connect(receivers.on_topic_published, dispatch_uid="social.topic_published")
        comment_posted.connect(receivers.on_comment_posted, dispatch_uid="social.comment_posted")
        comment_status_changed.connect(receivers.on_comment_changed, dispatch_uid="social.comment_status_changed")
        comments_imported.connect(receivers.on_comments_imported, dispatch_uid="social.comments_imported")
        signals.activity_recorded.connect(receivers.on_activity_recorded, dispatch_uid="social.activity_recorded")
        signals.user_returned.connect(receivers.on_user_returned, dispatch_uid="social.user_returned")
        signals.user_muted.connect(receivers.on_user_muted, dispatch_uid="social.user_muted")
        signals.user_followed.connect(receivers.on_user_followed, dispatch_uid="social.user_followed")
