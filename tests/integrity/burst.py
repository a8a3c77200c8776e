"""The 16-writer burst the integrity tests run against a store of their own: a child process
(`manage.py shell`, tasks run eagerly as without a broker) whose 16 threads post comments and
replies in topics of every storage strategy, like and unlike them, and follow and unfollow,
through the services, each printing "<worker> <n>" after its n-th acknowledged write."""

import os
import re
import selectors
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ACK = re.compile(r"\d+ \d+")

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

_WRITERS = """
import random, sys, threading, traceback
from django.contrib.auth import get_user_model
from comments.services import comment_create, comment_like, comment_unlike
from social.services import follow_create, follow_delete
from topics.models import Topic

users = list(get_user_model().objects.filter(username__startswith="u"))
topics = list(Topic.objects.all())
lock, stop = threading.Lock(), threading.Event()

def say(line):
    with lock:
        print(line, flush=True)

def work(worker):
    rng, n, recent = random.Random(worker), 0, []
    try:
        while not stop.is_set():
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

threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in range(16)]
for t in threads:
    t.start()
"""

# Until killed (the kill -9 test), or until a line on stdin, after which each thread finishes the
# write it is in and the child prints "stopped".
UNTIL_KILLED = _WRITERS + "threading.Event().wait()\n"
UNTIL_TOLD = _WRITERS + """sys.stdin.readline()
stop.set()
for t in threads:
    t.join()
say("stopped")
"""


class Store:
    """A site of its own: a temporary SQLite database and embedded store, or a database of its own
    on MONGODB_URI; `manage` runs a management command on it in a new process."""

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

    def set_up(self):
        self.manage("migrate", "--noinput")
        self.manage("mongo_indexes")
        assert "ready" in self.manage("shell", "-c", SETUP).stdout

    def writers(self, script: str) -> "Writers":
        return Writers(subprocess.Popen([sys.executable, "manage.py", "shell", "-c", script], cwd=ROOT,
                                        env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True))

    def drop(self):
        if os.environ.get("MONGODB_URI"):
            self.manage("shell", "-c", "from core.mongo import get_db; d = get_db(); d.client.drop_database(d.name)",
                        check=False)


class Writers:
    """The running burst: `read(until)` reads acknowledgements into `acknowledged` (worker -> its
    last acknowledged write) until `until()` holds (False) or the child says it stopped (True)."""

    def __init__(self, child: subprocess.Popen):
        self.child = child
        self.acknowledged: dict[int, int] = {}
        self.selector = selectors.DefaultSelector()
        self.selector.register(child.stdout, selectors.EVENT_READ)

    def read(self, until) -> bool:
        while True:
            if not self.selector.select(timeout=30):
                pytest.fail(f"the writers went quiet: {self.acknowledged}")
            line = self.child.stdout.readline()
            assert line, self.child.stderr.read()
            assert not line.startswith("ERROR"), line
            if line.strip() == "stopped":
                return True
            if ACK.fullmatch(line.strip()):  # else one of the shell's own lines
                worker, n = map(int, line.split())
                self.acknowledged[worker] = n
                if until():
                    return False

    @property
    def total(self) -> int:
        return sum(self.acknowledged.values())
