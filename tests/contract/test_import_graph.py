"""The project's apps import each other without cycles, and no app imports another app's private
names (`from x import _y`). Read from the source with `ast`: every module of every app, imports
at the top of a module and inside functions alike (an import hidden in a function is still an
edge of the graph)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The project's own top-level packages: each is a node of the graph. `cms_site` is the wiring
# (settings, urls) that may import every app; `core` is what every app may import.
APPS = sorted(p.name for p in ROOT.iterdir()
              if (p / "__init__.py").exists() and p.name not in {"tests"} and not p.name.startswith("."))
WIRING = {"cms_site"}


def modules(app: str):
    for path in sorted((ROOT / app).rglob("*.py")):
        if "migrations" not in path.parts:
            yield path


def imports(path: Path):
    """(imported module, imported names) of every import statement of a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            yield module, [alias.name for alias in node.names]


def app_of(module: str) -> str | None:
    top = module.split(".")[0]
    return top if top in APPS else None


def graph() -> tuple[dict[str, set[str]], list[str]]:
    edges: dict[str, set[str]] = {app: set() for app in APPS}
    private = []
    for app in APPS:
        for path in modules(app):
            for module, names in imports(path):
                target = app_of(module)
                if target is None or target == app:
                    continue
                edges[app].add(target)
                private += [f"{path.relative_to(ROOT)}: from {module} import {name}"
                            for name in names if name.startswith("_") and not name.startswith("__")]
    return edges, private


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle found by a depth-first walk (each reported once, from its smallest app)."""
    found = set()
    for start in edges:
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in edges.get(node, ()):
                if nxt == start:
                    cycle = path[:]
                    i = cycle.index(min(cycle))
                    found.add(tuple(cycle[i:] + cycle[:i]))
                elif nxt not in path and nxt > start:
                    stack.append((nxt, [*path, nxt]))
    return [list(c) for c in sorted(found)]


def test_the_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_apps_import_each_other_without_cycles():
    edges, _ = graph()
    edges = {app: targets - WIRING for app, targets in edges.items() if app not in WIRING}
    assert cycles(edges) == [], "import cycles between apps: " + "; ".join(" -> ".join([*c, c[0]]) for c in cycles(edges))


# The embedded engine is infrastructure below core: core's connection module (core/mongo.py) is
# the one place that creates it, and it imports no app of the project either.
ENGINE = "docstore"


def test_core_imports_no_app():
    edges, _ = graph()
    assert edges["core"] - {ENGINE} == set()
    assert edges[ENGINE] == set()


def test_no_app_imports_another_apps_private_names():
    _, private = graph()
    assert private == [], "\n".join(private)


def test_services_never_import_tasks():
    """Services send signals; receivers enqueue tasks; tasks call services. A service importing a
    tasks module (even inside a function, to hide the cycle) would close that loop."""
    found = [f"{path.relative_to(ROOT)}: {module}"
             for app in APPS for path in modules(app) if path.stem == "services"
             for module, _ in imports(path) if module.split(".")[-1] == "tasks"]
    assert found == [], "\n".join(found)


def _selector_modules():
    for app in APPS:
        for path in modules(app):
            if path.stem == "selectors":
                yield pytest.param(path, id=str(path.relative_to(ROOT)))


@pytest.mark.parametrize("path", list(_selector_modules()))
def test_selectors_never_import_services(path):
    """Selectors read; services write and may use selectors, never the other way round."""
    found = [module + (f" ({', '.join(names)})" if names else "") for module, names in imports(path)
             if module.split(".")[-1] == "services" or "services" in names]
    assert found == [], f"{path.relative_to(ROOT)} imports " + "; ".join(found)
