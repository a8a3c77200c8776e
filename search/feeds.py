"""A topic's comment feed (Atom, Django's syndication framework): its latest visible
comments, read from the search index (its current statuses: removed, hidden, pending and
deleted comments never appear). One bounded query."""

from django.contrib.syndication.views import Feed
from django.http import Http404
from django.utils.feedgenerator import Atom1Feed
from django.utils.html import escape

from core.errors import NotFound
from search import selectors
from topics.selectors import topic_get

FEED_ITEMS = 20


class TopicCommentsFeed(Feed):
    feed_type = Atom1Feed

    def get_object(self, request, slug):
        try:
            # Feeds are public: a draft's feed is a 404 even for editors.
            return topic_get(slug=slug, viewer=None)
        except NotFound as exc:
            raise Http404(exc.message) from None

    def title(self, obj):
        return f"Commons: comments on {obj.title}"

    def link(self, obj):
        return obj.get_absolute_url()

    def subtitle(self, obj):
        return f"The latest comments on “{obj.title}”."

    def items(self, obj):
        return [selectors.CommentHit(topic=obj, hit=h) for h in selectors.topic_latest_comments(topic=obj, limit=FEED_ITEMS)]

    def item_title(self, item):
        return f"{item.hit.author}: {item.hit.excerpt[:80]}"

    def item_description(self, item):
        # Atom's summary here is HTML: a comment without stored html gives its excerpt escaped.
        return item.hit.html or escape(item.hit.excerpt)

    def item_link(self, item):
        return item.url

    def item_guid(self, item):
        return f"comment:{item.hit.discussion_id}:{item.hit.comment_id}"

    def item_author_name(self, item):
        return item.hit.author

    def item_pubdate(self, item):
        return item.hit.posted
