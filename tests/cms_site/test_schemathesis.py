"""Schemathesis over the whole OpenAPI schema, in process (WSGI, no server): every operation,
anonymous and authenticated (a user and an editor), with the checks for server errors,
response schema conformance and status-code conformance (each status an operation answers
is documented). Zero failures.

Bounded and repeatable: `EXAMPLES` generated cases per operation and identity,
derandomised. Generated path parameters mostly name nothing (404s); every other example
is pointed at a topic, comment and user that exist, so the success paths run too. Rate
limits are off here (tests/settings.py) as in the rest of the suite; their 429 is
documented and tested in tests/core/test_throttling.py.
"""

import itertools
from collections import Counter

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error, response_schema_conformance, status_code_conformance

EXAMPLES = 10
CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance]
RUN = Counter()
_turn = itertools.count()


def _load_schema():
    # Loaded at collection (the schema view reads no database), so every operation is a test of its own.
    from cms_site.wsgi import application

    return schemathesis.openapi.from_wsgi("/api/schema/", application)


schema = _load_schema()


@pytest.fixture
def world(make_topic, make_user, editor):
    from rest_framework.authtoken.models import Token

    from comments import services

    topic = make_topic("document", "threaded", title="Schemathesis")
    alice = make_user("alice")
    make_user("bob")
    comment = services.comment_create(topic=topic, author=alice, text="a comment to act on")
    return {
        "existing": {"slug": topic.slug, "comment_id": comment.id, "username": "bob"},
        "anonymous": {},
        "alice": {"Authorization": f"Token {Token.objects.get_or_create(user=alice)[0].key}"},
        "editor": {"Authorization": f"Token {Token.objects.get_or_create(user=editor)[0].key}"},
    }


@pytest.fixture(scope="module", autouse=True)
def summary():
    yield
    if RUN:
        operations = {op for op, _ in RUN}
        identities = {who for _, who in RUN}
        print(f"\nschemathesis: {len(operations)} operations x {len(identities)} identities, "
              f"{sum(RUN.values())} examples called and checked")


@schema.parametrize()
@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck), database=None)
@pytest.mark.django_db
@pytest.mark.parametrize("identity", ["anonymous", "alice", "editor"])
def test_api_conforms_to_its_schema(case, world, identity):
    if next(_turn) % 2 and case.path_parameters:
        for name, value in world["existing"].items():
            if name in case.path_parameters:
                case.path_parameters[name] = value
    case.call_and_validate(headers=world[identity], checks=CHECKS)
    RUN[(case.operation.label, identity)] += 1
