"""`manage.py integrity --repair` run again and again while 16 writers post, like and follow,
then `manage.py integrity` on the quiet site: nothing differs.

docs/deploy.md says the repair is safe while people write: each fix is guarded by what it read,
and a post younger than the grace period (60 s) may be in flight and is left to its writer.
A child process (`manage.py shell` on a store of its own, tasks run eagerly as without a broker)
runs 16 threads that post comments and replies in topics of every storage strategy, like and
unlike them, and follow and unfollow, through the services; meanwhile the repair runs as an
operator would, a separate process each time, on the same embedded file. Then the writers are
told to stop, each finishes the write it is in, and the check must find the site whole: a
repair that wrote a value computed from a read older than a writer's step (a credit flow set
back, a post finished while its writer was still finishing it) leaves a difference here."""

import re
import selectors
import subprocess
import sys

import pytest

from tests.integrity.test_kill9_services import ACK, ROOT, SETUP, Store

pytestmark = pytest.mark.restarts

WRITERS = """
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
            if roll < 0.5 or not recent:
                parent = rng.choice(recent)[1] if recent and rng.random() < 0.4 else None
                if parent is not None and parent[0] != topic.pk:
                    parent = None
                comment = comment_create(topic=topic, author=user, text=f"words {worker} {n}",
                                         parent=parent[1] if parent else None)
                recent = (recent + [(topic, (topic.pk, comment.id), comment.author.id)])[-20:]
            elif roll < 0.8:
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

threads = [threading.Thread(target=work, args=(w,)) for w in range(16)]
for t in threads:
    t.start()
sys.stdin.readline()  # the test says stop
stop.set()
for t in threads:
    t.join()
say("stopped")
"""

REPAIRS = 3  # repair runs while the writers write


@pytest.fixture
def store(tmp_path):
    store = Store(tmp_path)
    yield store
    store.drop()


def test_repair_during_a_16_writer_burst_leaves_nothing_for_the_check(store):
    store.manage("migrate", "--noinput")
    store.manage("mongo_indexes")
    assert "ready" in store.manage("shell", "-c", SETUP).stdout
    child = subprocess.Popen([sys.executable, "manage.py", "shell", "-c", WRITERS], cwd=ROOT, env=store.env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    acknowledged: dict[int, int] = {}
    selector = selectors.DefaultSelector()
    selector.register(child.stdout, selectors.EVENT_READ)

    def read_acks(until):
        while True:
            if not selector.select(timeout=30):
                pytest.fail(f"the writers went quiet: {acknowledged}")
            line = child.stdout.readline()
            assert line, child.stderr.read()
            assert not line.startswith("ERROR"), line
            if line.strip() == "stopped":
                return True
            if ACK.fullmatch(line.strip()):
                worker, n = map(int, line.split())
                acknowledged[worker] = n
                if until():
                    return False

    repairs = []
    try:
        read_acks(lambda: len(acknowledged) == 16 and sum(acknowledged.values()) >= 150)
        for _ in range(REPAIRS):
            # The repair runs while the writers go on (their output is read meanwhile, so they never block).
            repair = subprocess.Popen([sys.executable, "manage.py", "integrity", "--repair"], cwd=ROOT,
                                      env=store.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            base = sum(acknowledged.values())
            while repair.poll() is None:
                read_acks(lambda base=base: sum(acknowledged.values()) >= base + 16)
                base = sum(acknowledged.values())
            repairs.append(repair.stdout.read())
        written = sum(acknowledged.values())
        child.stdin.write("stop\n")
        child.stdin.flush()
        assert read_acks(lambda: False)
        assert child.wait(timeout=120) == 0, child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert written >= 150
    after = store.manage("integrity", check=False)
    assert after.returncode == 0, "\n".join(after.stdout.splitlines()[-40:]) + "\n--- the repairs:\n" + \
        "\n".join(line for out in repairs for line in out.splitlines() if not line.endswith(": ok"))
    assert re.search(r"^0 difference\(s\)$", after.stdout, re.MULTILINE), after.stdout
