"""Code comments and docstrings state the rule they follow (MongoDB's documentation, a seed by
its file name such as `seeds/004_d286869db7b63c27.txt`), never an issue, audit or finding
number, nor a bare seed number: a reader of the repository cannot look those up. Read in the
comments of the project's Python, CSS, JavaScript and HTML (templates) files, not in the
third-party files it vendors, and in the whole text of the README and docs/ (read by people
without the tracker)."""

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Never the project's: the virtualenv, the collected static files (Django's and DRF's assets),
# and the vendored third-party files (tests/browser/vendor/).
SKIP = {".venv", ".venv-isso", "venv", "node_modules", ".git", "staticfiles", "vendor"}  # .venv-isso: make bench-load's peer
PY_SKIP = SKIP | {"static", "docs"}

# An issue/audit/finding word followed by a number (plural, "items", "#" and a hyphen allowed),
# or the word seed(s) followed by a bare number after a space or a hyphen; a seed's file name
# (seeds/004_d286...) is fine.
CITATION = re.compile(
    r"\b(?:audit|issue|finding)s?[\s-]+(?:items?\s+)?#?\d+"
    r"|\bseeds?[\s-]+#?\d{1,3}(?![\d_])",
    re.IGNORECASE,
)

# The comments of the other file types: CSS and JavaScript block comments, JavaScript line
# comments (not after a colon, so no URL is taken for one), HTML comments and Django template
# comments (`{# ... #}` and `{% comment %} ... {% endcomment %}`).
COMMENTS = {
    ".css": re.compile(r"/\*.*?\*/", re.DOTALL),
    ".js": re.compile(r"/\*.*?\*/|(?<![:\\])//[^\n]*", re.DOTALL),
    ".html": re.compile(r"<!--.*?-->|\{#.*?#\}|\{%\s*comment\b.*?%\}.*?\{%\s*endcomment\s*%\}", re.DOTALL),
}


def project_files(suffix: str, skip: set[str] = SKIP):
    for path in sorted(ROOT.rglob(f"*{suffix}")):
        if not skip.intersection(path.relative_to(ROOT).parts):
            yield path


def python_files():
    yield from project_files(".py", PY_SKIP)


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


def other_comments(source: str, suffix: str):
    """(line, text) of every comment of a CSS, JavaScript or HTML source."""
    for match in COMMENTS[suffix].finditer(source):
        yield source.count("\n", 0, match.start()) + 1, match.group(0)


def other_citations(source: str, suffix: str) -> list[tuple[int, str]]:
    return [(line + text.count("\n", 0, match.start()), match.group(0)) for line, text in other_comments(source, suffix)
            for match in CITATION.finditer(text)]


def test_the_check_finds_citations_and_spares_rules():
    source = (
        '"""Repairs the counters (audit 15)."""\n'
        "x = 1  # seed 004 HoSc\n"
        "def f():\n"
        '    """Pinned first (Issue #9, item 5); see seeds 000/003."""\n'
        "y = 'audit 3 in a plain string is data, not a comment'\n"
        "# seeds/004_d286869db7b63c27.txt: keep one year of flows; the audit log; 200 scans\n"
        "# The seed-004 write; seed #3; issue-9; audits 15 and 16\n"
    )
    assert [line for line, _ in citations(source)] == [2, 7, 7, 7, 7, 1, 4, 4]


def test_the_check_reads_the_comments_of_css_js_and_html():
    css = "a { color: red; }  /* (issue 9) */\n/* seeds/004_d286869db7b63c27.txt */\n.b::after { content: 'issue 9'; }\n"
    assert other_citations(css, ".css") == [(1, "issue 9")]
    js = "const u = 'https://x.example/issue 1';\n// the seed-004 rule\n/* fine\n   audit 15 */\n"
    assert other_citations(js, ".js") == [(2, "seed-004"), (4, "audit 15")]
    html = "<p>{{ x }}</p>\n<!-- seed 004 -->\n{# issue 7 #}\n{% comment %}\nfinding 2\n{% endcomment %}\n"
    assert other_citations(html, ".html") == [(2, "seed 004"), (3, "issue 7"), (5, "finding 2")]


def test_no_comment_or_docstring_cites_an_issue_audit_or_seed_number():
    found = [f"{path.relative_to(ROOT)}:{line}: {text!r}"
             for path in python_files()
             for line, text in citations(path.read_text(encoding="utf-8"))]
    assert found == [], "cite the rule itself, not a number:\n" + "\n".join(found)


@pytest.mark.parametrize("suffix", sorted(COMMENTS))
def test_no_css_js_or_html_comment_cites_an_issue_audit_or_seed_number(suffix):
    files = list(project_files(suffix))
    assert files  # the walk found the project's files of this kind
    found = [f"{path.relative_to(ROOT)}:{line}: {text!r}"
             for path in files
             for line, text in other_citations(path.read_text(encoding="utf-8"), suffix)]
    assert found == [], "cite the rule itself, not a number:\n" + "\n".join(found)


def test_no_page_of_the_docs_cites_an_issue_audit_or_seed_number():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = [f"{path.relative_to(ROOT)}:{number}: {match.group(0)!r}"
             for path in pages
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             for match in CITATION.finditer(line)]
    assert found == [], "name the rule or the seed file, not a number:\n" + "\n".join(found)
