"""Template filters of the social app."""

from django import template

from social import selectors

register = template.Library()


@register.filter
def with_followed_commenters(topics, user) -> list:
    """The topics, each with `followed_commenters` ("N people you follow commented", or None) for
    the signed-in `user`: one read for the whole list (`selectors.followed_commenters_by_topic`),
    not one per topic; anonymous visitors get None everywhere and no read."""
    topics = list(topics)
    found = selectors.followed_commenters_by_topic(topic_ids=[t.pk for t in topics], viewer=user)
    for topic in topics:
        topic.followed_commenters = found.get(topic.pk)
    return topics
