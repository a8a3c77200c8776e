"""A muted author's comments collapse on the topic page: the comments app asks `comments.viewers`,
where the social app (which owns mutes) registers whom a viewer muted."""

import pytest

from comments import services as comments
from comments import viewers
from social import services as social

pytestmark = pytest.mark.django_db


def test_the_social_app_tells_the_topic_page_whom_i_muted(client, make_topic, make_user):
    topic = make_topic("document", "chronological")
    me, loud, quiet = make_user("me"), make_user("loud"), make_user("quiet")
    comments.comment_create(topic=topic, author=loud, text="very loud words")
    comments.comment_create(topic=topic, author=quiet, text="quiet words")
    social.mute_create(muter=me, muted=loud)
    assert viewers.muted_ids(me) == {loud.pk}
    client.force_login(me)
    page = client.get(f"/t/{topic.slug}/").content.decode()
    assert page.count('class="muted-comment"') == 1 and "You muted loud" in page and "quiet words" in page
