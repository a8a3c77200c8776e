"""A log-in's username of the wrong JSON type is a 400 and counts toward the per-account limit:
a numeric username sent as a JSON number never skips it."""

import pytest
from rest_framework.test import APIClient

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("rate_limits_on")]


def test_a_numeric_username_as_a_json_number_is_a_400_and_counted(make_user):
    make_user("123456")
    statuses = []
    for n in range(12):  # the per-account limit is 10 in 15 minutes; every attempt from a new address
        client = APIClient(REMOTE_ADDR=f"203.0.113.{n + 1}", raise_request_exception=False)
        answer = client.post("/api/auth/token/", {"username": 123456, "password": "pw-for-tests"}, format="json")
        statuses.append(answer.status_code)
    assert set(statuses[:10]) == {400} and statuses[10:] == [429, 429], statuses
    # The same account by its text is throttled too: the JSON number counted against it.
    client = APIClient(REMOTE_ADDR="198.51.100.9", raise_request_exception=False)
    assert client.post("/api/auth/token/", {"username": "123456", "password": "pw-for-tests"},
                       format="json").status_code == 429


@pytest.mark.parametrize("username", [True, 1.5, ["123456"], {"$gt": ""}, None])
def test_other_wrong_types_are_a_400(make_user, username):
    make_user("123456")
    client = APIClient(REMOTE_ADDR="203.0.113.50", raise_request_exception=False)
    assert client.post("/api/auth/token/", {"username": username, "password": "pw-for-tests"},
                       format="json").status_code == 400
