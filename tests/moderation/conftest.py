import pytest

from tests.outages import STORAGES


@pytest.fixture(params=STORAGES)
def topic(request, make_topic):
    """A topic in each storage strategy in turn."""
    return make_topic(request.param, order="chronological" if request.param == "bucketed" else "threaded")


@pytest.fixture
def alice(make_user):
    return make_user("alice")


@pytest.fixture
def bob(make_user):
    return make_user("bob")


def premoderate(topic):
    """Put a topic on pre-moderation (the `comment_moderation` field of the topics app)."""
    topic.comment_moderation = "pre"
    if any(f.name == "comment_moderation" for f in topic._meta.fields):
        topic.save(update_fields=["comment_moderation"])
    return topic
