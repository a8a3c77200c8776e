"""Every keyset list of the API pages through the one pagination class, core.paging's
`KeysetPagination`: read from the source with `ast`, every `cursor=` an API view hands to a
selector is the `cursor` a `KeysetPagination` of that view parsed from the request, and every
view that pages by cursor answers through that paginator (its links and envelope). The schema
side (each cursor list documents that envelope) is tests/core/test_keyset_pagination.py."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
API_MODULES = sorted(p for p in ROOT.glob("*/api.py") if p.parent.name not in {"core", "tests"})


def _paginators(function: ast.AST) -> set[str]:
    """Names bound to `KeysetPagination(...)` in a function (`p = K(...)`, `a, p = x, K(...)`)."""
    names = set()
    for node in ast.walk(function):
        if not isinstance(node, ast.Assign):
            continue
        pairs = []
        for target in node.targets:
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                pairs += zip(target.elts, node.value.elts, strict=False)
            else:
                pairs.append((target, node.value))
        for target, value in pairs:
            if (isinstance(target, ast.Name) and isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                    and value.func.id == "KeysetPagination"):
                names.add(target.id)
    return names


def problems(path: Path, source: str | None = None) -> list[str]:
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        paginators = _paginators(function)
        for call in ast.walk(function):
            if not isinstance(call, ast.Call):
                continue
            for keyword in call.keywords:
                value = keyword.value
                if keyword.arg == "cursor" and not (isinstance(value, ast.Attribute) and value.attr == "cursor"
                                                    and isinstance(value.value, ast.Name)
                                                    and value.value.id in paginators):
                    found.append(f"{path.parent.name}/api.py:{call.lineno} {function.name}: cursor= not from "
                                 "KeysetPagination")
        # A view that pages by cursor answers through its paginator, not a hand-built envelope.
        if paginators:
            used = {node.value.id for node in ast.walk(function) if isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name) and node.attr in ("get_paginated_response", "links")}
            if not used & paginators:
                found.append(f"{path.parent.name}/api.py:{function.lineno} {function.name}: no paginator links")
    return found


def test_the_check_finds_a_hand_made_cursor_list():
    source = '''
def get(self, request):
    page = selectors.feed_page(cursor=request.query_params.get("cursor"))
    return Response({"results": page.items, "next": f"?cursor={page.next_cursor}"})


def get(self, request):
    params, paginator = request.query_params, KeysetPagination(request)
    page = selectors.queue_page(cursor=paginator.cursor)
    return Response({"results": page.items})


def get(self, request):
    paginator = KeysetPagination(request)
    page = selectors.log_page(cursor=paginator.cursor)
    return paginator.get_paginated_response(page.items, next_cursor=page.next_cursor)
'''
    assert [p.split(" ", 1)[1] for p in problems(ROOT / "x" / "api.py", source)] == [
        "get: cursor= not from KeysetPagination", "get: no paginator links"]


@pytest.mark.parametrize("path", API_MODULES, ids=[p.parent.name for p in API_MODULES])
def test_every_cursor_list_of_the_api_pages_through_keyset_pagination(path):
    assert problems(path) == []


def test_the_cursor_lists_are_where_they_should_be():
    """The check above looked at the views of every keyset list (it would pass on no views)."""
    paging = {p.parent.name for p in API_MODULES if any(_paginators(f) for f in ast.walk(ast.parse(p.read_text()))
                                                        if isinstance(f, ast.FunctionDef))}
    assert paging == {"comments", "moderation", "notifications", "search", "social"}
