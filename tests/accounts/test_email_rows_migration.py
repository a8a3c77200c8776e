"""An account that had its address only on its user row (made by the admin or `create_user`, or
from before allauth) keeps it after the upgrade, even once another account added it too."""

import re

import pytest
from allauth.account.models import EmailAddress
from django.core import mail
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("accounts", "0002_username_keys")]
CONFIRM_LINK = re.compile(r"/accounts/confirm-email/\S+")


@pytest.mark.django_db(transaction=True)
def test_a_user_row_address_stays_its_accounts_after_the_upgrade(client, make_user):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    alice = make_user("alice", email="Alice@Example.org")  # the user table is the same before and after
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    mallory = type(client)()
    mallory.force_login(make_user("mallory"))
    mallory.post("/accounts/email/", {"email": "alice@example.org", "action_add": ""})
    # alice confirms her address, as notification e-mail asks her to: she is sent the link ...
    client.force_login(alice)
    client.post("/accounts/email/", {"email": "alice@example.org", "action_send": ""})
    mallory.post("/accounts/email/", {"email": "alice@example.org", "action_send": ""})
    links = [link for m in mail.outbox for link in CONFIRM_LINK.findall(m.body)]
    assert len(links) == 1  # ... and mallory's re-send is not: it mails alice the notice again
    client.post(links[0])
    assert list(EmailAddress.objects.filter(verified=True).values_list("user__username", "email")) == [
        ("alice", "alice@example.org")]
