"""Atom feeds (Django's syndication framework) and the sitemap (Django's sitemaps).

Only what a visitor may see: live topics (published, publish_at passed), visible
comments of a live topic (from the search index's current statuses: removed, hidden,
pending and deleted comments never appear). Each feed is one bounded query.
"""

from django.contrib.sitemaps import Sitemap
from django.contrib.syndication.views import Feed
from django.utils.feedgenerator import Atom1Feed

from topics.models import Tag, Topic

FEED_ITEMS = 20


class LatestTopicsFeed(Feed):
    feed_type = Atom1Feed
    title = "Commons: latest topics"
    link = "/"
    subtitle = "The latest published topics on Commons."

    def items(self):
        return Topic.objects.live().select_related("author").prefetch_related("tags")[:FEED_ITEMS]

    def item_title(self, item):
        return item.title

    def item_description(self, item):
        return item.body_html or item.summary

    def item_author_name(self, item):
        return item.author.username

    def item_pubdate(self, item):
        return item.published_at

    def item_updateddate(self, item):
        return item.updated

    def item_categories(self, item):
        return [t.name for t in item.tags.all()]


class TopicSitemap(Sitemap):
    changefreq = "daily"
    limit = 5000

    def items(self):
        return Topic.objects.live().order_by("-published_at", "-id").only("slug", "updated")

    def lastmod(self, item):
        return item.updated


class TagSitemap(Sitemap):
    changefreq = "daily"
    priority = 0.3

    def items(self):
        return Tag.objects.filter(topics__in=Topic.objects.live()).distinct().order_by("name")


class PageSitemap(Sitemap):
    priority = 0.8

    def items(self):
        return ["home"]

    def location(self, item):
        return "/"


SITEMAPS = {"pages": PageSitemap, "topics": TopicSitemap, "tags": TagSitemap}
