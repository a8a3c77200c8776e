"""The docs pages the README links say what the code does: every environment variable the
settings read is in docs/configuration.md, and every API operation of the OpenAPI schema is
in docs/api.md."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV_READERS = {"get", "getenv"}  # os.environ.get(...), os.getenv(...)
METHODS = r"((?:GET|POST|PUT|PATCH|DELETE)(?:\|(?:GET|POST|PUT|PATCH|DELETE))*)"


def _settings_env_names() -> set[str]:
    tree = ast.parse((ROOT / "cms_site" / "settings.py").read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ENV_READERS or called.startswith("env_"):
                if isinstance(node.args[0].value, str) and re.fullmatch(r"[A-Z][A-Z0-9_]+", node.args[0].value):
                    names.add(node.args[0].value)
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            if isinstance(node.value, ast.Attribute) and node.value.attr == "environ":
                names.add(node.slice.value)
    return names


def test_every_environment_variable_the_settings_read_is_documented():
    names = _settings_env_names()
    assert len(names) > 30  # the reader above found the settings' variables
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", (ROOT / "docs" / "configuration.md").read_text()))
    assert sorted(names - documented) == []


def _normalised(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path.rstrip("/") + "/")


@pytest.mark.django_db
def test_every_api_operation_is_in_docs_api():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    doc = (ROOT / "docs" / "api.md").read_text()
    listed = set()
    for methods, path in re.findall(METHODS + r"\s+(/api/[^\s?]+)", doc):
        for method in methods.split("|"):
            listed.add((method, _normalised(path)))
    missing = []
    for path, operations in schema["paths"].items():
        for method in operations:
            if method.upper() in {"GET", "POST", "PUT", "PATCH", "DELETE"} and (method.upper(), _normalised(path)) not in listed:
                if path in ("/api/schema/",) or (method.upper() == "PUT" and ("PATCH", _normalised(path)) in listed):
                    continue
                missing.append(f"{method.upper()} {path}")
    assert missing == []


def _entries(doc: str) -> dict[tuple[str, str], str]:
    """The endpoint lines of docs/api.md's code blocks, by (method, normalised path): each entry's
    own line and the indented lines that continue it."""
    entries: dict[tuple[str, str], str] = {}
    current: list[tuple[str, str]] = []
    for block in doc.split("```")[1::2]:
        for line in block.splitlines():
            found = re.findall(METHODS + r"\s+(/api/[^\s?]+)", line)
            if found and re.match(METHODS, line):
                current = [(m, _normalised(path)) for methods, path in found for m in methods.split("|")]
            elif not line.startswith(" "):
                current = []
            for key in current:
                entries[key] = entries.get(key, "") + "\n" + line
    return entries


def _body_schema(schema: dict, operation: dict) -> dict:
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    ref = body.get("$ref")
    return schema["components"]["schemas"][ref.rsplit("/", 1)[-1]] if ref else body


@pytest.mark.django_db
def test_every_query_parameter_its_values_and_every_required_field_are_in_docs_api():
    """Each operation's entry in docs/api.md names every query parameter of the schema (and each
    value of one that takes a fixed set, such as `order`) and every required body field."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    entries = _entries((ROOT / "docs" / "api.md").read_text())
    missing, checked = [], 0
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            key = (method.upper(), _normalised(path))
            if path == "/api/schema/" or key[0] not in {"GET", "POST", "PUT", "PATCH", "DELETE"}:
                continue
            entry = entries.get(key) or entries.get(("PATCH", key[1]) if key[0] == "PUT" else key, "")
            words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", entry))
            wanted = []
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query":
                    wanted.append(parameter["name"])
                    wanted += [str(v) for v in parameter.get("schema", {}).get("enum", []) if v not in ("", None)]
            wanted += _body_schema(schema, operation).get("required", [])
            checked += len(wanted)
            missing += [f"{key[0]} {path}: {name}" for name in wanted if name not in words]
    assert checked > 40  # the walk above found the schema's parameters and fields
    assert missing == [], "\n".join(missing)


def _layout_folders(text: str) -> list[str]:
    """The folders of the first code block of a page: lines that start with `name/`."""
    block = text.split("```", 2)[1]
    return re.findall(r"^([a-z_]+)/", block, flags=re.MULTILINE)


def test_the_architecture_page_lists_every_folder_and_only_folders_that_exist():
    """docs/architecture.md's layout names every package of the project (and the shared templates,
    static files and tests), and every folder it names exists."""
    listed = _layout_folders((ROOT / "docs" / "architecture.md").read_text())
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists() and not p.name.startswith(".")}
    assert len(listed) == len(set(listed))
    assert sorted((packages | {"templates", "static"}) - set(listed)) == []
    assert sorted(name for name in listed if not (ROOT / name).is_dir()) == []


def test_the_topic_page_is_where_the_architecture_page_says():
    """The topic page is the topics app's; comments only render its comment section."""
    from django.urls import resolve

    from topics import views

    assert resolve("/t/any-slug/").func is views.topic_detail
    text = (ROOT / "docs" / "architecture.md").read_text()
    topics = text[text.index("\ntopics/"):text.index("\nsearch/")]
    assert "a topic's page" in topics and "sections.py" in topics
