"""Code comments and docstrings state the rule they follow (MongoDB's documentation, a seed by
its file name such as `seeds/004_d286869db7b63c27.txt`), never an issue, audit or finding
number, nor a bare seed number: a reader of the repository cannot look those up."""

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIP = {".venv", "venv", "node_modules", ".git", "static", "docs"}

# An issue/audit/finding word followed by a number (plural, "items" and "#" allowed), or the
# word seed(s) followed by a bare number; a seed's file name (004_d286...) is fine.
CITATION = re.compile(
    r"\b(?:audit|issue|finding)s?\s+(?:items?\s+)?#?\d"
    r"|\bseeds?\s+\d{1,3}(?![\d_])",
    re.IGNORECASE,
)


def python_files():
    for path in sorted(ROOT.rglob("*.py")):
        if not SKIP.intersection(path.relative_to(ROOT).parts):
            yield path


def comments_and_docstrings(source: str):
    """(line, text) of every `#` comment and every docstring of a module, class or function."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                yield body[0].lineno, body[0].value.value


def citations(source: str) -> list[tuple[int, str]]:
    return [(line, match.group(0)) for line, text in comments_and_docstrings(source)
            for match in CITATION.finditer(text)]


def test_the_check_finds_citations_and_spares_rules():
    source = (
        '"""Repairs the counters (audit 15)."""\n'
        "x = 1  # seed 004 HoSc\n"
        "def f():\n"
        '    """Pinned first (Issue #9, item 5); see seeds 000/003."""\n'
        "y = 'audit 3 in a plain string is data, not a comment'\n"
        "# seeds/004_d286869db7b63c27.txt: keep one year of flows; the audit log; 200 scans\n"
    )
    assert [line for line, _ in citations(source)] == [2, 1, 4, 4]


def test_no_comment_or_docstring_cites_an_issue_audit_or_seed_number():
    found = [f"{path.relative_to(ROOT)}:{line}: {text!r}"
             for path in python_files()
             for line, text in citations(path.read_text(encoding="utf-8"))]
    assert found == [], "cite the rule itself, not a number:\n" + "\n".join(found)
