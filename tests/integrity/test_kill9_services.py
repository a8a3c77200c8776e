"""`manage.py integrity` after a kill -9 in the middle of 16 concurrent writers and a restart.

A child process (`manage.py shell` on a store of its own: a temporary SQLite database and
embedded store, or a database of its own on MONGODB_URI) runs 16 threads that post comments
and replies in topics of every storage strategy, like and unlike them, and follow and
unfollow, through the services (tasks run eagerly in the process, as without a broker). Once
every thread has acknowledged writes for a few seconds it is killed with SIGKILL. Then, as
after a restart: a new process on the same store runs the pending background work
(`tasks_replay`), `integrity --repair --grace 0` (the grace is for posts in flight: none are,
the writers are dead), and `integrity`, which must report nothing.

What the repair finds is what a kill leaves by design (docs/deploy.md, "Integrity"): a
number taken by a post that was not stored (a tombstone fills it), a like edge whose counter
step did not run, a comment whose search entry, activity delivery or notification task never
ran (eager tasks die with the process), a follow edge whose lists were not written, a credit
flow not recorded after its comment. Nothing
else: the repaired report names only those checks."""

import os
import re
import selectors
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.restarts

ROOT = Path(__file__).resolve().parents[2]
ACK = re.compile(r"\d+ \d+")
REPAIRABLE = {"posts", "counter", "ranks", "anchors", "likes", "search", "follow lists", "feeds", "notification groups",
              "unread", "credits"}

SETUP = """
from django.contrib.auth import get_user_model
from topics.services import topic_create
User = get_user_model()
editor = User.objects.create_user(username="editor", password=None, is_staff=True, is_superuser=True)
for i in range(24):
    User.objects.create_user(username=f"u{i}", password=None)  # no password to hash: quicker
for storage in ("document", "embedded", "bucketed"):
    topic_create(author=editor, title=f"Storm {storage}", comment_storage=storage, comment_order=None,
                 status="published")
print("ready")
"""

WRITERS = """
import random, threading, traceback
from django.contrib.auth import get_user_model
from comments.selectors import comment_page
from comments.services import comment_create, comment_like, comment_unlike
from core.paging import PageRequest
from social.services import follow_create, follow_delete
from topics.models import Topic

users = list(get_user_model().objects.filter(username__startswith="u"))
topics = list(Topic.objects.all())
lock = threading.Lock()

def say(line):
    with lock:
        print(line, flush=True)

def work(worker):
    rng, n = random.Random(worker), 0
    recent = []
    try:
        while True:
            user, topic = rng.choice(users), rng.choice(topics)
            roll = rng.random()
            if roll < 0.45 or not recent:
                parent = rng.choice(recent)[1] if recent and rng.random() < 0.3 and topic.comment_storage != "bucketed" else None
                if parent is not None and parent[0] != topic.pk:
                    parent = None
                comment = comment_create(topic=topic, author=user, text=f"words {worker} {n}",
                                         parent=parent[1] if parent else None)
                recent = (recent + [(topic, (topic.pk, comment.id), comment.author.id)])[-20:]
            elif roll < 0.75:
                topic, (_, cid), author = rng.choice(recent)
                liker = rng.choice([u for u in users if u.pk != author])
                (comment_like if rng.random() < 0.7 else comment_unlike)(topic=topic, comment_id=cid, user=liker)
            else:
                a, b = rng.sample(users, 2)
                (follow_create if rng.random() < 0.7 else follow_delete)(follower=a, followee=b)
            n += 1
            say(f"{worker} {n}")
    except BaseException:
        say("ERROR " + traceback.format_exc().replace("\\n", " | "))

for w in range(16):
    threading.Thread(target=work, args=(w,), daemon=True).start()
threading.Event().wait()
"""


class Store:
    def __init__(self, tmp: Path):
        self.env = {**os.environ, "DJANGO_SETTINGS_MODULE": "cms_site.settings", "PYTHONUNBUFFERED": "1",
                    "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}", "MONGODB_SNAPSHOT": "",
                    "MONGODB_DB": f"kill9_{uuid.uuid4().hex[:12]}",
                    "MONGODB_EMBEDDED_PATH": str(tmp / "embedded.sqlite3"), "RATE_LIMITS": "off",
                    "SPAM_DUPLICATE_WINDOW": "0", "SECRET_KEY": "insecure-key-for-tests-only", "DEBUG": "1"}
        self.env.pop("CELERY_BROKER_URL", None)

    def manage(self, *args, check=True, stdin=None):
        result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True,
                                text=True, timeout=300, input=stdin)
        if check:
            assert result.returncode == 0, f"manage.py {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
        return result

    def drop(self):
        if os.environ.get("MONGODB_URI"):
            self.manage("shell", "-c", "from core.mongo import get_db; d = get_db(); d.client.drop_database(d.name)",
                        check=False)


@pytest.fixture
def store(tmp_path):
    store = Store(tmp_path)
    yield store
    store.drop()


def test_integrity_reports_nothing_after_a_kill_9_of_16_writers_and_a_restart(store):
    store.manage("migrate", "--noinput")
    store.manage("mongo_indexes")
    assert "ready" in store.manage("shell", "-c", SETUP).stdout
    child = subprocess.Popen([sys.executable, "manage.py", "shell", "-c", WRITERS], cwd=ROOT, env=store.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    acknowledged: dict[int, int] = {}
    selector = selectors.DefaultSelector()
    selector.register(child.stdout, selectors.EVENT_READ)
    start = time.monotonic()
    try:
        while time.monotonic() - start < 120:
            if not selector.select(timeout=30):
                pytest.fail(f"the writers went quiet: {acknowledged}")
            line = child.stdout.readline()
            assert line, child.stderr.read()
            assert not line.startswith("ERROR"), line
            if not ACK.fullmatch(line.strip()):
                continue  # the shell's own lines
            worker, n = map(int, line.split())
            acknowledged[worker] = n
            if len(acknowledged) == 16 and sum(acknowledged.values()) >= 400:
                break
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert len(acknowledged) == 16

    # The restart: a new process on the same store, the pending background work, the repair.
    store.manage("tasks_replay")
    repaired = store.manage("integrity", "--repair", "--grace", "0", check=False)
    report = repaired.stdout + repaired.stderr
    print(report)
    assert re.search(r"^0 difference\(s\) remain$", report, re.MULTILINE), report  # not "10 difference(s) remain"
    differences = next(line for line in report.splitlines() if line.startswith("checked "))
    for part in differences.split("differences ", 1)[1].split(", "):
        check, count = part.rsplit(": ", 1)
        assert int(count) == 0 or check in REPAIRABLE, differences
    after = store.manage("integrity", check=False)
    assert after.returncode == 0, after.stdout + after.stderr
    assert re.search(r"^0 difference\(s\)$", after.stdout, re.MULTILINE), after.stdout
