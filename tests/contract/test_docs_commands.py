"""Every command line of the README and docs/*.md works copied as-is into a clone after `make run`:
a `manage.py` line is `.venv/bin/python manage.py NAME ...` (plain `python` is not the project's
virtualenv), names a command that exists and passes that command's own argparse parser (its
synopsis filled in: optional parts taken, the first of `a|b`, placeholders given a value); a
`make` line names a target of the Makefile. The lines are read from the inline code spans and
the fenced blocks of each page, so the docs cannot drift from the commands."""

import re
import shlex
from pathlib import Path

import pytest
from django.core.management import find_commands, get_commands, load_command_class

from manage import BENCH_COMMANDS

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYTHON = ".venv/bin/python"
ENV = r"(?:[A-Z][A-Z0-9_]*=(?:\"[^\"]*\"|'[^']*'|\S*)\s+)*"  # `DEBUG=1 ...`, `MONGODB_URI="$NEW_URI" ...`
MANAGE = re.compile(rf"^{ENV}(?P<python>\S*python\S*\s+)?manage\.py(?:\s+(?P<rest>.*))?$")
MAKE = re.compile(rf"^{ENV}make\s+(?P<target>[a-z][a-z0-9-]*)(?P<rest>.*)$")
# Values for the placeholders of a synopsis, where the command checks them (choices, numbers).
PLACEHOLDERS = {"FORMAT": "disqus", "N": "2", "URI": "mongodb://localhost:27017", "GROUPS": "feeds"}


def _snippets(text: str):
    """(line number, code) of each fenced block line (a line indented under a command continues
    it) and each inline code span (which may wrap across lines)."""
    fenced, prose, inside = [], [], False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            inside = not inside
            prose.append("")
            continue
        if inside:
            if line.startswith((" ", "\t")) and fenced and fenced[-1][2] == number - 1 and line.strip():
                fenced[-1] = (fenced[-1][0], fenced[-1][1] + " " + line.strip(), number)
            else:
                fenced.append((number, line.strip(), number))
            prose.append("")
        else:
            prose.append(line)
    yield from ((number, code) for number, code, _ in fenced if code)
    joined = "\n".join(prose)
    for match in re.finditer(r"`([^`]+)`", joined):
        yield joined.count("\n", 0, match.start()) + 1, " ".join(match.group(1).split())


def _command_lines():
    for page in PAGES:
        for number, code in _snippets(page.read_text(encoding="utf-8")):
            code = re.sub(r"\s+#.*$", "", code).strip()
            if code == "manage.py" or not (MANAGE.match(code) or MAKE.match(code)):
                continue
            yield pytest.param(code, id=f"{page.relative_to(ROOT)}:{number}")


LINES = list(_command_lines())


def _arguments(synopsis: str) -> list[str]:
    """A concrete argument list from a documented synopsis: `[--x N]` taken, `a|b` -> `a`,
    `<username>...` -> `username`, `...` after an option -> a value, placeholders filled in."""
    synopsis = synopsis.replace("[", " ").replace("]", " ")
    words: list[str] = []
    for word in shlex.split(synopsis):
        word = word.strip("<>")
        if word.endswith("...") and word != "...":
            word = word[:-3]
        if word == "...":
            if words and words[-1].startswith("--"):
                words.append("x")  # `--json ... --plots`: an elided value
            continue
        if "|" in word and not word.startswith(("mongodb:", "docstore:")):
            word = word.split("|")[0]
        words.append(PLACEHOLDERS.get(word, word))
    return words


def _make_targets() -> set[str]:
    return set(re.findall(r"^([a-z][a-z0-9-]*)\s*:(?!=)", (ROOT / "Makefile").read_text(), flags=re.M))


def test_the_docs_have_command_lines():
    assert len(LINES) > 40  # the reader above finds them


@pytest.mark.parametrize("line", LINES)
def test_a_documented_command_line_runs_as_written(line):
    make = MAKE.match(line)
    if make:
        assert make["target"] in _make_targets(), f"{line!r}: no target {make['target']!r} in the Makefile"
        return
    manage = MANAGE.match(line)
    assert (manage["python"] or "").strip() == PYTHON, (
        f"{line!r}: write `{PYTHON} manage.py ...` (the project's virtualenv; plain `python` is another interpreter)")
    words = _arguments(manage["rest"] or "")
    assert words, f"{line!r} names no command"
    name, args = words[0], words[1:]
    if (name, args) == ("COMMAND", []):
        return  # the form itself (`.venv/bin/python manage.py COMMAND`), as the pages introduce it
    commands = get_commands()
    if name in BENCH_COMMANDS:  # manage.py runs these with the harness's settings, whose app has them
        commands = {**commands, **dict.fromkeys(find_commands(str(ROOT / "bench" / "management")), "bench")}
    assert name in commands, f"{line!r}: no command {name!r}"
    command = load_command_class(commands[name], name)
    command.create_parser("manage.py", name).parse_args(args)  # CommandError on an option it does not take
