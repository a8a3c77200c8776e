"""The embedded engine's layers, each a folder of `docstore/`, each importing only the layers below
it (docs/architecture.md, "The embedded engine"):

    server    MongoDB's wire protocol and the commands a driver sends (`python -m docstore serve`)
    surface   the pymongo surface: Client, Database, Collection, cursors, results, errors
    exec      runs a plan over storage and counts executionStats
    plan      index bounds, candidate plans, the choice between them
    query     matching, updates, projections, pipelines, expressions, collation, shard-key rules
    storage   SQLite, the key encoding, BSON cuts, documents read in place, the kept-document cache

Read from the source with `ast`, imports inside functions included (an upward import hidden in a
function is still an upward edge). Within a layer modules may import each other."""

import ast
from pathlib import Path

from tests.contract.test_import_graph import ROOT, _import_nodes

ENGINE = ROOT / "docstore"
# Top to bottom. `docstore/__init__.py` is the package's entry (it hands out `Client`) and sits
# above every layer; so does `__main__.py`, the command line, when there is one.
LAYERS = ["cluster", "server", "surface", "exec", "plan", "query", "storage"]
ENTRY = {"__init__", "__main__"}


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "docstore" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in LAYERS else None


def imported_modules(path: Path, source: str | None = None):
    """Every engine module a module imports: `import a.b`, `from a.b import c` (which may be the
    module `a.b.c`), `from docstore import plan` (the package `docstore.plan`)."""
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    for module, node in _import_nodes(path, tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        else:
            yield from (f"{module}.{alias.name}" for alias in node.names)


def upward_imports(path: Path, source: str | None = None) -> list[str]:
    """The imports of a module of one layer that reach a layer above it, or the entry."""
    rel = path.relative_to(ENGINE)
    if len(rel.parts) < 2:
        return []  # the entry may import every layer
    own, found = rel.parts[0], []
    for target in imported_modules(path, source):
        layer = layer_of(target)
        if target.split(".")[:2] in (["docstore", "Client"], ["docstore", "__init__"]) or target == "docstore":
            found.append(f"docstore/{rel}: {own} imports the entry ({target})")
        elif layer is not None and LAYERS.index(layer) < LAYERS.index(own):
            found.append(f"docstore/{rel}: {own} imports {target} ({layer} is above it)")
    return found


def test_every_module_lives_in_a_layer():
    loose = sorted(p.name for p in ENGINE.glob("*.py") if p.stem not in ENTRY)
    folders = sorted(p.name for p in ENGINE.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert loose == [], f"modules outside the layers: {loose}"
    assert folders == sorted(LAYERS)


def test_the_check_finds_an_upward_import():
    path = ENGINE / "query" / "example.py"  # never written: the source is given
    source = """
from docstore.storage import keys
from docstore.query.match import filter_applies


def f():
    from docstore.exec.executor import Executor
    import docstore.surface.collection
    from docstore import plan
    from docstore import Client
"""
    assert upward_imports(path, source) == [
        "docstore/query/example.py: query imports docstore.exec.executor.Executor (exec is above it)",
        "docstore/query/example.py: query imports docstore.surface.collection (surface is above it)",
        "docstore/query/example.py: query imports docstore.plan (plan is above it)",
        "docstore/query/example.py: query imports the entry (docstore.Client)",
    ]


def test_layers_import_only_downward():
    found = [line for path in sorted(ENGINE.rglob("*.py")) for line in upward_imports(path)]
    assert found == [], "\n".join(found)
