"""Audit: no regular expression in the project's code ends in `$`.

`$` also matches just before a trailing newline, so `re.match(r"^[0-9a-f]{24}$", "…\\n")`
accepts a value that then breaks whatever trusts it (the feed cursor's ObjectId was a
500). Validators use `re.fullmatch` (or `\\Z`). This test reads every module (not the
tests, the virtualenv or migrations) and fails on a pattern given to `re` that ends in
an unescaped `$`, so a new one cannot slip in.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RE_FUNCTIONS = {"compile", "match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer"}
SKIP = {".venv", "tests", "migrations", "node_modules", "staticfiles"}


def _modules():
    for path in ROOT.rglob("*.py"):
        if not SKIP.intersection(path.relative_to(ROOT).parts):
            yield path


def _dollar_anchored(pattern: str) -> bool:
    if not pattern.endswith("$"):
        return False
    backslashes = len(pattern[:-1]) - len(pattern[:-1].rstrip("\\"))
    return backslashes % 2 == 0  # an unescaped `$`


def test_no_regex_ends_in_dollar():
    found, modules = [], 0
    for path in _modules():
        modules += 1
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in RE_FUNCTIONS and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "re" and node.args):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and _dollar_anchored(first.value):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {first.value!r}")
    assert modules > 50
    assert not found, "use re.fullmatch (or \\Z) instead of a trailing $:\n" + "\n".join(found)


def test_the_audit_sees_a_dollar():
    assert _dollar_anchored(r"^[0-9a-f]{24}$")
    assert not _dollar_anchored(r"price in \$")
    assert _dollar_anchored("a\\\\$")  # an escaped backslash, then an anchor
