"""What the comment maintenance commands share: the topics to work on (every topic, or those
named by slug; an unknown slug is an error before anything is changed)."""

from django.core.management.base import BaseCommand, CommandError

from topics.models import Topic


class TopicsCommand(BaseCommand):
    """A command over topics: `slugs` arguments, `self.topics(options)` in primary key order."""

    def add_arguments(self, parser):
        parser.add_argument("slugs", nargs="*", help="Topics to work on (default: every topic).")

    def topics(self, options):
        slugs = options["slugs"]
        topics = Topic.objects.order_by("pk")
        if slugs:
            topics = topics.filter(slug__in=slugs)
            missing = sorted(set(slugs) - set(topics.values_list("slug", flat=True)))
            if missing:
                raise CommandError(f"No such topic: {', '.join(missing)}")
        return topics.iterator()
