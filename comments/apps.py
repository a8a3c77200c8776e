from django.apps import AppConfig


class CommentsConfig(AppConfig):
    name = "comments"
    verbose_name = "Comments"

    def ready(self):
        from django.core import checks

        from comments.managers.embedded import check_settings

        checks.register(check_settings, checks.Tags.compatibility)

        from comments import receivers, signals

        signals.discussion_outgrown.connect(receivers.on_discussion_outgrown, dispatch_uid="comments.outgrown")
        signals.discussion_move_stalled.connect(receivers.on_discussion_move_stalled,
                                                dispatch_uid="comments.move_stalled")
        signals.discussion_anchors_due.connect(receivers.on_discussion_anchors_due, dispatch_uid="comments.anchors")
        signals.comments_imported.connect(receivers.on_discussion_anchors_due, dispatch_uid="comments.anchors_imported")

        from accounts.parts import register_account_part
        from comments import selectors, services

        # First: the erasure of the comments sends the signals that hide their notifications and search words.
        register_account_part("comments", order=10, export=lambda user: selectors.account_export(user=user),
                              erase=lambda *, user, comments: services.comments_forget_author(user=user, mode=comments))

        from comments import views
        from topics.sections import register_topic_section

        register_topic_section("comments", order=10, build=views.topic_comments)
