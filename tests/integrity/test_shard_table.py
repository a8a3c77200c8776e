"""docs/deploy.md's shard-key table is what `manage.py mongo_shard --dry-run` prints."""

import ast
import re
from io import StringIO
from pathlib import Path

from django.conf import settings
from django.core.management import call_command

DEPLOY = Path(settings.BASE_DIR) / "docs" / "deploy.md"


def _documented() -> dict[str, dict]:
    text = DEPLOY.read_text()
    table = text[text.index("| collection | shard key | why |"):]
    rows = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        collection, key = (cell.strip().strip("`") for cell in line.strip("|").split("|")[:2])
        # `{a: 1, b: "hashed"}` -> {"a": 1, "b": "hashed"}
        rows[collection] = ast.literal_eval(re.sub(r"([{,]\s*)(\w+):", r'\1"\2":', key))
    return rows


def test_the_deploy_table_is_the_dry_run_output():
    out = StringIO()
    call_command("mongo_shard", "--dry-run", stdout=out)
    printed = {}
    for line in out.getvalue().splitlines():
        name, key = line.split(": ", 1)
        printed[name.split(".", 1)[1]] = ast.literal_eval(key)
    # Key order matters in a shard key: compare the fields in order.
    assert {c: list(k.items()) for c, k in _documented().items()} == {c: list(k.items()) for c, k in printed.items()}


def test_every_hashed_index_on_id_belongs_to_a_shard_key():
    from core.managers import declared_indexes, declared_shard_keys

    keys = declared_shard_keys()
    for collection, models in declared_indexes().items():
        if any(dict(m.document["key"]) == {"_id": "hashed"} for m in models):
            assert keys.get(collection) == {"_id": "hashed"}, collection
