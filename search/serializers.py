from rest_framework import serializers

from core.paging import KeysetPagination
from topics.models import Topic
from topics.serializers import TopicSerializer


class CommentSearchHitSerializer(serializers.Serializer):
    """A visible comment matching a search: where it is and an excerpt of its text."""

    id = serializers.CharField(source="hit.comment_id")
    topic = serializers.SlugField(source="topic.slug")
    topic_title = serializers.CharField(source="topic.title")
    topic_status = serializers.ChoiceField(
        source="topic.state", choices=Topic.STATES, read_only=True,
        help_text="Only editors are ever shown comments of a topic that is not live.")
    author = serializers.CharField(source="hit.author")
    posted = serializers.DateTimeField(source="hit.posted")
    excerpt = serializers.CharField(source="hit.excerpt")
    url = serializers.CharField()


CommentSearchPageSerializer = KeysetPagination.page_serializer("CommentSearchPageSerializer", CommentSearchHitSerializer)


class TopicPageSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    num_pages = serializers.IntegerField()
    results = TopicSerializer(many=True)


class SearchResultSerializer(serializers.Serializer):
    q = serializers.CharField()
    topics = TopicPageSerializer(required=False, help_text="With kind=all or topics.")
    comments = CommentSearchPageSerializer(required=False, help_text="With kind=all or comments.")
