import pytest

from tests.comments.support import LAYOUTS


@pytest.fixture(params=LAYOUTS, ids=[f"{s}-{o}" for s, o in LAYOUTS])
def topic(request, make_topic):
    """A topic in each layout in turn (a test module may override it)."""
    return make_topic(*request.param)


@pytest.fixture
def alice(make_user):
    return make_user("alice")
