"""Every hot path is checked twice: on one node, and with the engine's shard model
(docstore/query/cluster.py), where a collection with a declared shard key is planned as one
shard of a cluster plans it (a SHARDING_FILTER that needs every shard-key field, skip applied
after the merge). A page must examine about page_size keys and documents on both."""

import pytest


@pytest.fixture(autouse=True, params=[False, True], ids=["node", "shard"])
def shard_model(request, settings):
    settings.MONGODB_EMBEDDED_SHARD_MODEL = request.param
    return request.param
