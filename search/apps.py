from django.apps import AppConfig


class SearchConfig(AppConfig):
    name = "search"
    verbose_name = "Search"

    def ready(self):
        from accounts.parts import register_account_part
        from comments import signals
        from search import receivers, services

        register_account_part("search", order=40,
                              erase=lambda *, user, comments: services.search_forget_author(username=user.username))

        signals.comment_posted.connect(receivers.on_comment_posted, dispatch_uid="search.posted")
        signals.comments_imported.connect(receivers.on_comments_imported, dispatch_uid="search.imported")
        signals.comment_edited.connect(receivers.on_comment_edited, dispatch_uid="search.edited")
        signals.comment_deleted.connect(receivers.on_comment_deleted, dispatch_uid="search.deleted")
        signals.comment_status_changed.connect(receivers.on_comment_status_changed, dispatch_uid="search.status")
