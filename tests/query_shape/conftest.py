"""Every hot path is checked twice: on one node, and with the engine's shard model
(docstore/query/cluster.py), where a collection with a declared shard key is planned as one
shard of a cluster plans it (a SHARDING_FILTER that needs every shard-key field, skip applied
after the merge). A page must examine about page_size keys and documents on both.

Through the simulated cluster (`make test-cluster`: MONGODB_URI at its router) the shards plan
so themselves, and each figure is read per shard from mongos's explain: only the shard case runs.
Against a single server (`make test-wire`) the figures are the embedded engine's: skipped."""

import pytest
from django.conf import settings as django_settings


def behind_mongos() -> bool:
    from core.mongo import is_embedded, on_a_cluster

    return not is_embedded() and on_a_cluster()


@pytest.fixture(autouse=True, params=[False, True], ids=["node", "shard"])
def shard_model(request, settings):
    if django_settings.MONGODB_URI:
        if not behind_mongos():
            pytest.skip("figures of the embedded engine: a single server has no shard model")
        if not request.param:
            pytest.skip("behind mongos every shard filters by the collection's key (its SHARDING_FILTER): a one-node "
                        "plan does not happen on a cluster")
    settings.MONGODB_EMBEDDED_SHARD_MODEL = request.param
    return request.param
