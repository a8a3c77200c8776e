"""The spam pipeline (moderation/spam.py): each check's verdict, and the verdicts through the
API and the pages: reject stores nothing, hold goes to the Pending queue with its reason.
Akismet is a stand-in HTTP server on 127.0.0.1, never the internet."""

import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from rest_framework.test import APIClient

from core.clients import Client
from moderation import spam
from moderation.models import SpamWord
from tests.comments.support import stored

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def duplicate_check_on(settings):
    settings.SPAM_DUPLICATE_WINDOW = 3600  # off for the rest of the suite (tests/settings.py)


def sub(text, *, author_id=1, honeypot=None):
    return spam.Submission(author_id=author_id, author_name="alice", text=text, client=Client(ip="203.0.113.7",
                                                                                            honeypot=honeypot))


# --- each check ---------------------------------------------------------------------------------

def test_clean_text_is_accepted():
    assert spam.spam_verdict(sub("A perfectly ordinary remark about the topic.")).action == spam.ACCEPT


def test_honeypot():
    assert spam.spam_verdict(sub("hello", honeypot="")).action == spam.ACCEPT
    verdict = spam.spam_verdict(sub("hello", honeypot="http://buy.example"))
    assert verdict.action == spam.REJECT and verdict.reason.startswith("honeypot")


@pytest.mark.parametrize("text,links", [
    ("see https://a.example/x and http://b.example", 2), ("www.example.com, shop.xyz/cheap", 2),
    ("[a](https://a.example) [b](https://b.example) [c](https://c.example) [d](https://d.example)", 4),
    ("no links here, just e.g. and i.e.", 0), ("ｈｔｔｐｓ://fullwidth.example", 1),
])
def test_count_links(text, links):
    assert spam.count_links(text) == links


def test_link_cap(settings):
    settings.SPAM_MAX_LINKS = 2
    two = "https://a.example https://b.example"
    assert spam.spam_verdict(sub(two)).action == spam.ACCEPT
    assert spam.spam_verdict(sub(two + " https://c.example")).action == spam.HOLD
    verdict = spam.spam_verdict(sub(" ".join(f"https://{n}.example" for n in range(5))))
    assert verdict.action == spam.REJECT and "5 links" in verdict.reason


def test_banned_and_suspect_words_editable_by_editors():
    SpamWord.objects.create(word="viagra", kind=SpamWord.BANNED)
    SpamWord.objects.create(word="crypto giveaway", kind=SpamWord.SUSPECT)
    assert spam.spam_verdict(sub("Cheap ＶＩＡＧＲＡ here")).action == spam.REJECT
    assert spam.spam_verdict(sub("A CRYPTO   giveaway tonight")).action == spam.HOLD
    assert spam.spam_verdict(sub("viagrafalls is a place")).action == spam.ACCEPT  # whole words only
    assert spam.spam_verdict(sub("cryptography")).action == spam.ACCEPT


def test_duplicate_within_the_window(settings):
    settings.SPAM_DUPLICATE_WINDOW = 600
    first = sub("Same words again")
    assert spam.spam_verdict(first).action == spam.ACCEPT
    spam.remember(first)
    assert spam.spam_verdict(sub("same   WORDS again")).action == spam.REJECT
    assert spam.spam_verdict(sub("Same words again", author_id=2)).action == spam.ACCEPT  # per user
    settings.SPAM_DUPLICATE_WINDOW = 0
    assert spam.spam_verdict(first).action == spam.ACCEPT  # off


def test_a_short_common_reply_is_a_duplicate_only_within_one_discussion(settings):
    settings.SPAM_DUPLICATE_WINDOW, settings.SPAM_DUPLICATE_MIN_LENGTH = 3600, 30
    here, there = "https://site.example/t/one/", "https://site.example/t/two/"
    thanks = spam.Submission(author_id=1, author_name="alice", text="Thanks!", topic_url=here)
    spam.remember(thanks)
    assert spam.spam_verdict(spam.Submission(author_id=1, author_name="alice", text="thanks!", topic_url=here)
                             ).action == spam.REJECT  # the same discussion: still a duplicate
    assert spam.spam_verdict(spam.Submission(author_id=1, author_name="alice", text="Thanks!", topic_url=there)
                             ).action == spam.ACCEPT
    long = "The same thirty-odd characters, pasted into every discussion"
    spam.remember(spam.Submission(author_id=1, author_name="alice", text=long, topic_url=here))
    assert spam.spam_verdict(spam.Submission(author_id=1, author_name="alice", text=long, topic_url=there)
                             ).action == spam.REJECT  # long enough to matter: site-wide


def test_thanks_in_a_second_topic_within_the_hour_is_accepted(make_topic, make_user):
    api = APIClient(raise_request_exception=False)
    api.force_authenticate(make_user("alice"))
    first, second = make_topic("document"), make_topic("bucketed")
    assert api.post(f"/api/topics/{first.slug}/comments/", {"text": "Thanks!"}, format="json").status_code == 201
    assert api.post(f"/api/topics/{second.slug}/comments/", {"text": "Thanks!"}, format="json").status_code == 201
    r = api.post(f"/api/topics/{second.slug}/comments/", {"text": "thanks!"}, format="json")
    assert r.status_code == 400 and r.json()["code"] == "spam"


def test_a_reject_stops_the_pipeline(settings):
    settings.SPAM_MAX_LINKS = 0
    verdict = spam.spam_verdict(sub("https://a.example https://b.example", honeypot="x"))
    assert verdict.action == spam.REJECT and [f.check for f in verdict.findings] == ["honeypot"]


# --- Akismet against a stand-in on 127.0.0.1 -------------------------------------------------------

class _Akismet(BaseHTTPRequestHandler):
    seen: list = []

    def do_POST(self):
        form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        type(self).seen.append((self.path, form))
        content = form.get("comment_content", [""])[0]
        self.send_response(200)
        if "discard-me" in content:
            self.send_header("X-akismet-pro-tip", "discard")
        self.end_headers()
        self.wfile.write(b"true" if ("spammy" in content or "discard-me" in content) else b"false")

    def log_message(self, *args):
        pass


@pytest.fixture
def akismet(settings):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Akismet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Akismet.seen = []
    settings.AKISMET_API_KEY = "test-key"
    settings.AKISMET_URL = f"http://127.0.0.1:{server.server_address[1]}"
    yield _Akismet
    server.shutdown()
    server.server_close()


def test_akismet_verdicts(akismet):
    assert spam.spam_verdict(sub("a fine comment")).action == spam.ACCEPT
    assert spam.spam_verdict(sub("spammy words")).action == spam.HOLD
    assert spam.spam_verdict(sub("discard-me now")).action == spam.REJECT
    path, form = akismet.seen[0]
    assert path == "/1.1/comment-check"
    assert form["api_key"] == ["test-key"] and form["user_ip"] == ["203.0.113.7"]
    assert form["comment_type"] == ["comment"] and form["comment_author"] == ["alice"]


def test_akismet_off_without_a_key_and_open_when_down(settings, akismet):
    settings.AKISMET_API_KEY = ""
    assert spam.spam_verdict(sub("spammy words")).action == spam.ACCEPT and akismet.seen == []
    settings.AKISMET_API_KEY = "test-key"
    settings.AKISMET_URL = "http://127.0.0.1:9"  # nothing listens: the comment goes through
    assert spam.spam_verdict(sub("spammy words")).action == spam.ACCEPT


# --- through the API and the pages ---------------------------------------------------------------

@pytest.fixture
def topic(make_topic):
    return make_topic("document", "threaded")


def test_api_reject_stores_nothing(topic, make_user):
    SpamWord.objects.create(word="casino", kind=SpamWord.BANNED)
    api = APIClient(raise_request_exception=False)
    api.force_authenticate(make_user("alice"))
    r = api.post(f"/api/topics/{topic.slug}/comments/", {"text": "Best casino bonus"}, format="json")
    assert r.status_code == 400 and r.json()["code"] == "spam" and "banned word 'casino'" in r.json()["detail"]
    assert stored(topic) == 0


def test_api_hold_goes_to_the_pending_queue_with_the_reason(topic, make_user, editor, settings):
    settings.SPAM_MAX_LINKS = 1
    api = APIClient()
    api.force_authenticate(make_user("alice"))
    r = api.post(f"/api/topics/{topic.slug}/comments/", {"text": "see https://a.example and https://b.example"},
                 format="json")
    assert r.status_code == 202 and r.json()["status"] == "pending"
    assert stored(topic) == 0  # held submissions stay out of storage until approved
    api.force_authenticate(editor)
    queue = api.get("/api/moderation/queue/", {"state": "pending"}).json()
    assert queue["count"] == 1
    assert "spam check: links: 2 links" in str(queue["results"][0])


def test_api_duplicate_is_rejected_after_the_first_is_stored(topic, make_user):
    api = APIClient(raise_request_exception=False)
    api.force_authenticate(make_user("alice"))
    assert api.post(f"/api/topics/{topic.slug}/comments/", {"text": "me too"}, format="json").status_code == 201
    r = api.post(f"/api/topics/{topic.slug}/comments/", {"text": "Me  too"}, format="json")
    assert r.status_code == 400 and r.json()["code"] == "spam"
    assert stored(topic) == 1


def test_page_honeypot_rejects_and_stores_nothing(client, topic, make_user):
    client.force_login(make_user("alice"))
    r = client.post(f"/t/{topic.slug}/comments/", {"text": "Nice post", "website": "http://seo.example"}, follow=True)
    said = [str(m) for m in r.context["messages"]]
    assert said == ["Not posted: This looks like spam (honeypot: a field people cannot see was filled in). "
                    "Your text is still in the form."]
    assert r.content.decode().count("Not posted:") == 1
    assert stored(topic) == 0
    client.post(f"/t/{topic.slug}/comments/", {"text": "Nice post", "website": ""})
    assert stored(topic) == 1


def test_an_edit_refused_as_spam_says_not_saved_once(client, topic, make_user):
    from comments import services

    SpamWord.objects.create(word="casino", kind=SpamWord.BANNED)
    alice = make_user("alice")
    comment = services.comment_create(topic=topic, author=alice, text="an honest remark")
    client.force_login(alice)
    r = client.post(f"/t/{topic.slug}/c/{comment.id}/edit/", {"text": "casino night"}, follow=True)
    assert [str(m) for m in r.context["messages"]] == [
        "Not saved: This looks like spam (words: banned word 'casino'). Your text is still in the form."]
    r = client.post(f"/t/{topic.slug}/c/{comment.id}/edit/", {"text": "casino night"}, HTTP_X_REQUESTED_WITH="fetch")
    assert r.status_code == 400 and r.json() == {"detail": "This looks like spam (words: banned word 'casino').",
                                                 "code": "spam"}


def test_comment_forms_carry_the_honeypot(client, topic, make_user):
    from comments import services

    services.comment_create(topic=topic, author=make_user("bob"), text="reply to me")
    client.force_login(make_user("alice"))
    page = client.get(f"/t/{topic.slug}/").content.decode()
    assert page.count('name="website"') >= 2  # the comment form and the reply form


def test_editors_skip_the_pipeline(topic, editor):
    SpamWord.objects.create(word="casino", kind=SpamWord.BANNED)
    api = APIClient()
    api.force_authenticate(editor)
    assert api.post(f"/api/topics/{topic.slug}/comments/", {"text": "casino night at the office"},
                    format="json").status_code == 201


def test_admin_edits_the_word_lists(client, editor):
    editor.is_superuser = True
    editor.save()
    client.force_login(editor)
    r = client.post("/admin/moderation/spamword/add/", {"word": "  Free Money ", "kind": "suspect", "note": ""})
    assert r.status_code == 302
    assert SpamWord.objects.get().word == "free money"
    assert spam.spam_verdict(sub("FREE money inside")).action == spam.HOLD


def test_an_edit_skips_the_checks_on_the_same_permission_as_a_post(topic, make_user, editor):
    """Staff without the moderation permission are checked, when posting and when editing; an
    editor (the permission) skips the checks on both."""
    from comments import services

    SpamWord.objects.create(word="casino", kind=SpamWord.BANNED)
    staff = make_user("staff", is_staff=True)
    with pytest.raises(spam.SpamRejected):
        services.comment_create(topic=topic, author=staff, text="casino night")
    comment = services.comment_create(topic=topic, author=staff, text="an honest remark")
    with pytest.raises(spam.SpamRejected, match="looks like spam"):
        services.comment_edit(topic=topic, comment_id=comment.id, text="casino night", user=staff)

    services.comment_create(topic=topic, author=editor, text="casino night at the office")
    own = services.comment_create(topic=topic, author=editor, text="a remark")
    services.comment_edit(topic=topic, comment_id=own.id, text="a remark on casino night", user=editor)


def _permission_queries(queries):
    return [q["sql"] for q in queries if 'FROM "auth_permission"' in q["sql"]]


def test_an_ordinary_post_asks_no_permission_but_an_editors_text_still_skips_every_check(topic, make_user, editor,
                                                                                         akismet, settings):
    """Whether the author is an editor changes nothing for a text no local check finds anything
    in when no remote check runs: the permission queries are not made. A text a check would
    hold, or one Akismet would see, asks, and an editor's still skips the pipeline."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    SpamWord.objects.create(word="casino", kind=SpamWord.BANNED)
    settings.AKISMET_API_KEY = ""
    api = APIClient()
    api.force_authenticate(make_user("plain"))
    with CaptureQueriesContext(connection) as queries:
        assert api.post(f"/api/topics/{topic.slug}/comments/", {"text": "an ordinary remark"},
                        format="json").status_code == 201
    assert _permission_queries(queries.captured_queries) == []
    api.force_authenticate(editor)
    with CaptureQueriesContext(connection) as queries:
        assert api.post(f"/api/topics/{topic.slug}/comments/", {"text": "casino night at the office"},
                        format="json").status_code == 201
    assert _permission_queries(queries.captured_queries) != []
    settings.AKISMET_API_KEY = "test-key"  # a remote check would see the text: an editor's never goes there
    assert api.post(f"/api/topics/{topic.slug}/comments/", {"text": "spammy night at the office"},
                    format="json").status_code == 201
    assert akismet.seen == []
    api.force_authenticate(make_user("other"))
    assert api.post(f"/api/topics/{topic.slug}/comments/", {"text": "spammy words here"},
                    format="json").status_code == 202  # held: Akismet says spam
    assert len(akismet.seen) == 1


def test_the_word_lists_are_read_at_every_post_and_compiled_once_per_version(topic, make_user, monkeypatch):
    """An editor's change applies at the next post (the rows are read on each one); the lists
    unchanged, a post normalises no word of them again, only its own text."""
    SpamWord.objects.create(word="casino", kind=SpamWord.BANNED)
    SpamWord.objects.create(word="free money", kind=SpamWord.SUSPECT)
    api = APIClient(raise_request_exception=False)
    api.force_authenticate(make_user("alice"))
    url = f"/api/topics/{topic.slug}/comments/"
    assert api.post(url, {"text": "a first remark"}, format="json").status_code == 201
    normalised, real = [], spam.normalise
    monkeypatch.setattr(spam, "normalise", lambda text: normalised.append(text) or real(text))
    assert api.post(url, {"text": "a second remark"}, format="json").status_code == 201
    assert "casino" not in normalised and "free money" not in normalised
    SpamWord.objects.create(word="remark", kind=SpamWord.BANNED)  # the next post sees it
    r = api.post(url, {"text": "a third remark"}, format="json")
    assert r.status_code == 400 and "banned word 'remark'" in r.json()["detail"]
    SpamWord.objects.filter(word="remark").delete()  # and the one after sees it gone
    assert api.post(url, {"text": "a fourth remark"}, format="json").status_code == 201
    assert stored(topic) == 3
