"""bench/post_profile.py's parallel measurement (PROCS x THREADS): every process and thread posts,
each thread through the one client made for it."""

import os
import threading

import pytest

from bench.post_profile import parallel_cpu


def test_parallel_cpu_posts_from_each_process_and_thread(tmp_path):
    log = tmp_path / "posts"

    def post(n: int, client) -> None:
        sum(range(500_000))  # some CPU to measure (os.times counts clock ticks)
        with open(log, "a") as out:  # one short append per post: whole lines from every writer
            out.write(f"{os.getpid()}|{threading.current_thread().name}|{id(client)}|{n}\n")

    cpu = parallel_cpu(post, object, 24, procs=2, threads=3)

    rows = [line.split("|") for line in log.read_text().splitlines()]
    assert len(rows) == 24  # 4 posts from each of 2 x 3 threads
    assert len({pid for pid, *_ in rows}) == 2 and os.getpid() not in {int(pid) for pid, *_ in rows}
    assert len({(pid, thread) for pid, thread, *_ in rows}) == 6
    # one client per thread, kept for its posts
    assert len({(pid, client) for pid, _, client, _ in rows}) == 6
    assert all(len({c for p, t, c, _ in rows if (p, t) == key}) == 1 for key in {(p, t) for p, t, *_ in rows})
    assert sorted(int(n) for *_, n in rows) == sorted(list(range(4)) * 6)
    assert cpu > 0


def test_parallel_cpu_fails_when_a_post_fails():
    def post(n: int, client) -> None:
        if n == 1:
            raise AssertionError("answered 500")

    with pytest.raises(RuntimeError, match="2 of 2 posting processes failed"):
        parallel_cpu(post, object, 8, procs=2, threads=2)
