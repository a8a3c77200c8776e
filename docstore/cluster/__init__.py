"""A sharded cluster simulated on one machine, for tests and measurement only, never a deployment
option: N shard servers (the engine's wire server, one docstore file each), a config store (a
docstore file holding each collection's shard key and its chunks), and a router that answers a
driver as mongos does (`python -m docstore cluster PATH --shards N`).

The top layer: it imports the server and the layers below it; nothing imports it but the command
line. keyspace.py maps documents and filters onto the shard-key space (MongoDB manual, "Shard
Keys", "Hashed Sharding", "Sharded Cluster Query Routing"); config.py keeps the chunks;
router.py routes each command; launch.py starts and stops the processes."""
