from django.apps import AppConfig


class SocialConfig(AppConfig):
    name = "social"
    verbose_name = "Social graph and feeds"

    def ready(self):
        from comments.signals import comment_posted
        from social import receivers
        from topics.signals import topic_published

        topic_published.connect(receivers.on_topic_published, dispatch_uid="social.topic_published")
        comment_posted.connect(receivers.on_comment_posted, dispatch_uid="social.comment_posted")
