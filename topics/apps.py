from django.apps import AppConfig


class TopicsConfig(AppConfig):
    name = "topics"
    verbose_name = "Topics"

    def ready(self):
        from comments import signals
        from topics import receivers

        signals.comment_posted.connect(receivers.on_comment_posted, dispatch_uid="topics.search.posted")
        signals.comments_imported.connect(receivers.on_comments_imported, dispatch_uid="topics.search.imported")
        signals.comment_edited.connect(receivers.on_comment_edited, dispatch_uid="topics.search.edited")
        signals.comment_deleted.connect(receivers.on_comment_deleted, dispatch_uid="topics.search.deleted")
        signals.comment_status_changed.connect(receivers.on_comment_status_changed,
                                               dispatch_uid="topics.search.status")
