"""The OpenAPI schema documents every operation's error responses (core/openapi.py)."""

import pytest

from core.api_errors import _flat_errors

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return response.json()


def test_every_operation_documents_its_errors(schema):
    operations = 0
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            operations += 1
            codes = set(operation["responses"])
            assert "401" in codes, (method, path)
            assert any(c.startswith("2") for c in codes), (method, path)
            if "{" in path:
                assert "404" in codes, (method, path)
            if method in ("post", "put", "patch", "delete"):
                assert {"400", "403", "429"} <= codes, (method, path)
                assert "Retry-After" in operation["responses"]["429"]["headers"]
    assert operations >= 20
    assert "detail" in schema["components"]["schemas"]["Error"]["required"]


def test_nested_validation_errors_are_flat():
    assert _flat_errors({"tags": {"0": ["too long"]}, "title": ["required"]}) == {"tags.0": ["too long"], "title": ["required"]}
    assert _flat_errors({"items": [{}, {"name": ["bad"]}]}) == {"items.1.name": ["bad"]}
    assert _flat_errors({"non_field_errors": ["no"]}) == {"non_field_errors": ["no"]}
