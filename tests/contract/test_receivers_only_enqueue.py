"""Receivers only enqueue (docs/architecture.md): every signal receiver an app connects in its
`AppConfig.ready()` lives in that app's `receivers` module, and a receivers module calls nothing
that writes: its functions call tasks' `delay`/`apply_async` (and read settings), so whatever a
signal asks for is a retried, idempotent task, never a write inside the writer's request."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("accounts", "comments", "moderation", "notifications", "search", "social", "topics", "background")


def _connects(app: str):
    tree = ast.parse((ROOT / app / "apps.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "connect":
            if node.args:
                yield ast.unparse(node.args[0])


def test_every_connected_receiver_is_in_its_apps_receivers_module():
    outside = [f"{app}: {target}" for app in APPS if (ROOT / app / "apps.py").exists()
               for target in _connects(app) if not target.startswith("receivers.")]
    assert not outside, outside


ALLOWED_CALLS = {"delay", "apply_async", "getattr", "int", "str", "bool", "list", "set", "sorted", "len", "max", "min",
                 "timestamp", "digest_window_start", "isinstance",
                 "outgrown_target"}  # pure functions of their arguments (no read, no write)


def test_receivers_modules_only_enqueue():
    offending = []
    for app in APPS:
        path = ROOT / app / "receivers.py"
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name not in ALLOWED_CALLS and not name.startswith("_"):
                    offending.append(f"{app}/receivers.py:{node.lineno} {ast.unparse(node.func)}")
    assert not offending, offending
