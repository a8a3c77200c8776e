"""Rebuild the comment search index of topics from their stored comments (the repair of the
search entries: see `search.services.comment_search_rebuild`)."""

from comments.management.topics import TopicsCommand
from search.services import comment_search_rebuild


class Command(TopicsCommand):
    help = ("Rebuild the search entries of every comment (in every topic, or in the topics named by slug) from "
            "the stored comments, one page at a time. Idempotent.")

    def handle(self, *args, **options):
        total = comment_search_rebuild(topics=self.topics(options), progress=lambda message: self.stdout.write(message))
        self.stdout.write(self.style.SUCCESS(f"comments_search_rebuild: {total} comment(s) indexed"))
