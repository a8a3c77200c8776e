"""The project's apps import each other without cycles, and no app reaches another app's private
names: not by importing them (`from x.y import _z`, `import x._y`), nor through an imported
module (`from x import y; y._z`, `import x.y; x.y._z`). Read from the source with `ast`: every
module of every app, imports at the top of a module and inside functions alike (an import
hidden in a function is still an edge of the graph)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The project's own top-level packages: each is a node of the graph, the wiring included.
# `cms_site` is the wiring (settings, urls, wsgi, the Celery app) that may import every app and
# that no app imports; `core` is what every app may import.
APPS = sorted(p.name for p in ROOT.iterdir()
              if (p / "__init__.py").exists() and p.name not in {"tests"} and not p.name.startswith("."))
WIRING = "cms_site"


def modules(app: str):
    for path in sorted((ROOT / app).rglob("*.py")):
        if "migrations" not in path.parts:
            yield path


def _import_nodes(path: Path, tree: ast.AST):
    """(absolute module, the statement) of every import statement of a module."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield "", node
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            yield module, node


def imports(path: Path):
    """(imported module, imported names) of every import statement of a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for module, node in _import_nodes(path, tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        else:
            yield module, [alias.name for alias in node.names]


def private(name: str) -> bool:
    """`_name` is private to its app; dunders (`__init__`, `__all__`, `__version__`) are not."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def reached(path: Path, source: str | None = None):
    """Every dotted name a module reaches through its imports: what it imports (`from a.b import
    c` is `a.b.c`, `import a.b` is `a.b`) and every attribute read through an imported name
    (`import a.b as m` then `m._x`, or `import a.b` then `a.b._x`, are `a.b._x`)."""
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    bound: dict[str, str] = {}
    for module, node in _import_nodes(path, tree):
        for alias in node.names:
            if isinstance(node, ast.Import):
                name = alias.asname or alias.name.split(".")[0]
                bound[name] = alias.name if alias.asname else name
                yield alias.name
            else:
                bound[alias.asname or alias.name] = f"{module}.{alias.name}"
                yield f"{module}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = []
            while isinstance(node, ast.Attribute):
                chain.append(node.attr)
                node = node.value
            if isinstance(node, ast.Name) and node.id in bound:
                yield ".".join([bound[node.id], *reversed(chain)])


def private_reaches(app: str, path: Path, source: str | None = None) -> list[str]:
    """The private names of other apps that a module of `app` reaches."""
    found = set()
    for dotted in reached(path, source):
        parts = dotted.split(".")
        target = app_of(dotted)
        first = next((i for i, part in enumerate(parts) if i and private(part)), None)
        if target is not None and target != app and first is not None:
            found.add(f"{path.relative_to(ROOT)}: {'.'.join(parts[: first + 1])}")
    return sorted(found)


def app_of(module: str) -> str | None:
    top = module.split(".")[0]
    return top if top in APPS else None


def graph() -> tuple[dict[str, set[str]], list[str]]:
    """The app graph (app -> the apps it imports) and every private name of another app reached."""
    edges: dict[str, set[str]] = {app: set() for app in APPS}
    reaches = []
    for app in APPS:
        for path in modules(app):
            for module, _ in imports(path):
                target = app_of(module)
                if target is not None and target != app:
                    edges[app].add(target)
            reaches += private_reaches(app, path)
    return edges, reaches


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
    assert WIRING in edges  # the wiring is a node like any app: a cycle through it fails too
    assert cycles(edges) == [], "import cycles between apps: " + "; ".join(" -> ".join([*c, c[0]]) for c in cycles(edges))


def test_no_app_imports_the_wiring():
    """Apps read the settings through `django.conf.settings` (Django loads `cms_site.settings` from
    DJANGO_SETTINGS_MODULE) and bind their tasks with `shared_task`; none imports `cms_site`."""
    found = [f"{path.relative_to(ROOT)}: {module}" for app in APPS if app != WIRING for path in modules(app)
             for module, _ in imports(path) if module.split(".")[0] == WIRING]
    assert found == [], "\n".join(found)


# The embedded engine is infrastructure below core: core's connection module (core/mongo.py) is
# the one place that creates it, and it imports no app of the project either.
ENGINE = "docstore"


def test_core_imports_no_app():
    edges, _ = graph()
    assert edges["core"] - {ENGINE} == set()
    assert edges[ENGINE] == set()


def test_the_check_finds_private_names_however_they_are_reached():
    path = ROOT / "search" / "example.py"  # never written: the source is given
    source = """
import comments.selectors
import comments.managers as storage
from comments import services
from comments.ids import _pattern, is_comment_id
from comments._internal import helper
from core import mongo
from search import _own


def f():
    from topics.selectors import _hidden
    comments.selectors._private_helper()
    storage.base._Codec
    services._require_writer(None)
    mongo._clients.clear()
    services.__name__, is_comment_id.__doc__, _own._fine
"""
    assert [line.split(": ")[1] for line in private_reaches("search", path, source)] == [
        "comments._internal", "comments.ids._pattern", "comments.managers.base._Codec",
        "comments.selectors._private_helper", "comments.services._require_writer", "core.mongo._clients",
        "topics.selectors._hidden"]


def test_no_app_reaches_another_apps_private_names():
    _, reaches = graph()
    assert reaches == [], "\n".join(reaches)


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


# --- modules of one app ---------------------------------------------------------------------
# An import cycle between two modules of one app is a circle too, even when a function-level
# import keeps Python from tripping over it at load time: each module needs the other to be
# understood, and the shared piece belongs in a module both import (one home per thing). A
# package's own `__init__` is reached only when it is named (`from pkg import name` of a name
# that is not a submodule): importing `pkg.mod` runs `pkg/__init__.py` first in Python, but that
# is how packages work, not an edge of the code's own design.


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_edges(paths: list[Path], sources: dict[Path, str] | None = None) -> dict[str, set[str]]:
    """module -> the modules of the same set it imports (at the top or in a function): `import a.b`
    is `a.b`; `from a import b` is `a.b` when that is a module of the set, else `a`."""
    sources = sources or {}
    names = {module_name(p): p for p in paths}
    edges: dict[str, set[str]] = {m: set() for m in names}
    for name, path in names.items():
        tree = ast.parse(sources[path] if path in sources else path.read_text(encoding="utf-8"))
        for module, node in _import_nodes(path, tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in names else module
                           for alias in node.names]
            edges[name] |= {t for t in targets if t in names and t != name}
    return edges


def tangles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative):
    each is a set of modules every one of which imports, directly or not, every other. Listing
    every simple cycle instead grows exponentially with an app's modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_the_check_finds_a_cycle_between_modules_hidden_in_a_function():
    app = ROOT / "example"  # never written: the sources are given
    sources = {
        app / "__init__.py": "",
        app / "layout.py": "import bson\n",
        app / "one.py": "from example.layout import charge\nfrom example.two import Two\n",
        app / "two.py": "from example import layout\n\ndef f():\n    from example.one import One\n",
        app / "three.py": "from example import one, two\n",
    }
    edges = module_edges(list(sources), sources)
    assert edges["example.two"] == {"example.layout", "example.one"}
    assert tangles(edges) == [["example.one", "example.two"]]
    assert tangles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert tangles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("app", APPS)
def test_modules_of_one_app_import_each_other_without_cycles(app):
    found = tangles(module_edges(list(modules(app))))
    assert found == [], f"modules of {app} importing each other in a circle: " + "; ".join(
        ", ".join(c) for c in found)
