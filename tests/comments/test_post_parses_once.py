"""A post's Markdown is parsed once: its plain words (the emptiness check, the search entry, the
feed excerpt), the spam check's link count and its stored HTML all come from one token stream."""

import uuid

import pytest
from markdown_it import MarkdownIt

pytestmark = pytest.mark.django_db


def test_a_post_parses_its_text_once(monkeypatch, api_client, make_topic, make_user):
    topic = make_topic("document")
    api_client.force_authenticate(make_user("ana"))
    parsed, real = [], MarkdownIt.parse
    monkeypatch.setattr(MarkdownIt, "parse", lambda md, src, env=None: parsed.append(src) or real(md, src, env))
    text = f"A **new** remark, see https://example.org/{uuid.uuid4().hex}"
    answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": text}, format="json")
    assert answer.status_code == 201, answer.content
    assert parsed == [text]
    assert '<strong>new</strong>' in answer.json()["html"] and 'href="https://example.org/' in answer.json()["html"]
