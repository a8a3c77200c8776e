import pytest

from tests.integrity.burst import Store


@pytest.fixture
def burst_store(tmp_path):
    """A store of its own for a burst of writer processes (tests/integrity/burst.py), dropped after."""
    store = Store(tmp_path)
    yield store
    store.drop()
