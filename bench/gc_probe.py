"""A gunicorn config module for the benches (`-c python:bench.gc_probe`): each worker records its
full (generation 2) garbage collections, one line each (the wall time it ended, its duration in ms,
the objects it freed), into GC_PROBE_DIR/<pid>.log through Python's `gc.callbacks`, so that a bench
can count and time them per run. Nothing is recorded without GC_PROBE_DIR."""

import gc
import os
import time


def post_worker_init(worker):
    folder = os.environ.get("GC_PROBE_DIR")
    if not folder:
        return
    path = os.path.join(folder, f"{os.getpid()}.log")
    started = [0.0]

    def probe(phase, info):
        if info.get("generation") != 2:
            return
        if phase == "start":
            started[0] = time.perf_counter()
            return
        took = (time.perf_counter() - started[0]) * 1000
        with open(path, "a") as out:
            out.write(f"{time.time():.3f} {took:.2f} {info.get('collected', 0)}\n")

    gc.callbacks.append(probe)
    trigger = os.path.join(folder, "freeze")
    if os.environ.get("GC_PROBE_FREEZE"):  # an experiment: one gc.freeze() once the bench creates `trigger`
        def freeze_once(phase, info):
            if phase == "stop" and os.path.exists(trigger):
                gc.callbacks.remove(freeze_once)
                gc.freeze()

        gc.callbacks.append(freeze_once)


def full_collections(folder: str, since: float, until: float) -> dict:
    """The workers' full collections that ended between `since` and `until` (time.time()): how many,
    their total and longest duration (ms), and the objects they freed."""
    durations, freed = [], 0
    for name in os.listdir(folder):
        if not name.endswith(".log"):
            continue
        with open(os.path.join(folder, name)) as lines:
            for line in lines:
                when, took, collected = line.split()
                if since <= float(when) <= until:
                    durations.append(float(took))
                    freed += int(collected)
    return {"count": len(durations), "total_ms": round(sum(durations), 1),
            "max_ms": round(max(durations), 1) if durations else 0.0, "freed": freed}
