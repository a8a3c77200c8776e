from django.apps import AppConfig


class CoreConfig(AppConfig):
    """Shared infrastructure as an app for its MongoDB commands (`mongo_indexes`, `mongo_shard`,
    `mongo_copy`), which find every manager through `core.managers`' registry; no models, no URLs."""

    name = "core"
    verbose_name = "Core"

    def ready(self):
        from core import (
            checks,  # noqa: F401  (registers the deployment checks of the site's settings)
            managers,
            mongo,
        )

        # The embedded engine enforces the declared shard keys; the connection module gets them from
        # the managers' registry through this hook instead of importing it (no core.mongo <-> core.managers cycle).
        mongo.set_shard_key_source(managers.declared_shard_keys)
