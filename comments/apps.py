from django.apps import AppConfig


class CommentsConfig(AppConfig):
    name = "comments"
    verbose_name = "Comments"

    def ready(self):
        from django.core import checks

        from comments.managers.embedded import check_settings

        checks.register(check_settings, checks.Tags.compatibility)
