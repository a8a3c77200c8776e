"""A removed comment shows visitors a "[removed]" placeholder only while a reply that is not
removed hangs from it (the thread's sake); with none it is left out of the page and the API's
page, whether it was removed here or imported as spam. Editors see every removed comment with
its text."""

import pytest

from comments import services
from moderation import services as moderation
from tests.comments.support import LAYOUTS
from tests.imports.support import FIXTURES, run_import

pytestmark = pytest.mark.django_db

IDS = [f"{s}-{o}" for s, o in LAYOUTS]


def _shown(client, topic):
    """(ids, texts) of the topic's first page as the API gives it, and the page's HTML."""
    results = client.get(f"/api/topics/{topic.slug}/comments/").json()["results"]
    return {c["id"]: c["text"] for c in results}, client.get(topic.get_absolute_url()).content.decode()


@pytest.mark.parametrize("storage,order", LAYOUTS, ids=IDS)
def test_a_removed_comment_keeps_a_placeholder_only_for_a_visible_reply(client, make_topic, make_user, editor,
                                                                         storage, order):
    topic = make_topic(storage, order)
    alice, bob = make_user("alice"), make_user("bob")
    lone = services.comment_create(topic=topic, author=alice, text="buy cheap watches")
    answered = services.comment_create(topic=topic, author=alice, text="a rude opener")
    reply = services.comment_create(topic=topic, author=bob, text="a calm answer", parent=answered.id)
    # removed with a reply that is removed too and a visible one below it: the thread holds both
    deep = services.comment_create(topic=topic, author=alice, text="rude again")
    middle = services.comment_create(topic=topic, author=alice, text="ruder still", parent=deep.id)
    bottom = services.comment_create(topic=topic, author=bob, text="please stop", parent=middle.id)
    moderation.comment_moderate(topic=topic, comment_ids=[lone.id, answered.id, deep.id, middle.id], action="remove",
                                moderator=editor)
    texts, html = _shown(client, topic)
    assert lone.id not in texts and f'id="c-{lone.id}"' not in html and "buy cheap" not in html
    assert texts[answered.id] == texts[deep.id] == texts[middle.id] == "[removed]"
    assert texts[reply.id] == "a calm answer" and texts[bottom.id] == "please stop"
    assert html.count("[removed]") == 3
    client.force_login(editor)
    texts, html = _shown(client, topic)
    assert texts[lone.id] == "buy cheap watches" and "buy cheap watches" in html


@pytest.mark.parametrize("storage,order", LAYOUTS, ids=IDS)
def test_imported_spam_without_replies_shows_visitors_nothing(client, make_topic, editor, storage, order):
    editor.is_superuser = True
    editor.save()
    topic = make_topic(storage, order, title="Existing topic", slug="existing-topic")
    run_import("disqus", FIXTURES / "disqus.xml", "--storage", storage, "--order", order)
    texts, html = _shown(client, topic)
    assert "[removed]" not in texts.values() and "[removed]" not in html and "Buy cheap watches" not in html
    assert "A reply" in texts.values()  # the rest of the import is there
    client.force_login(editor)
    texts, html = _shown(client, topic)
    assert "Buy cheap watches" in texts.values() and "Buy cheap watches" in html
