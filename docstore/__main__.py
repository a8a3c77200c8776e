"""`python -m docstore serve PATH` (and `python -m docstore cluster PATH --shards N`, a simulated
sharded cluster for tests and measurement only: docstore/cluster): an embedded store served over MongoDB's wire protocol, so any
MongoDB driver or tool (pymongo, mongosh, Compass, mongodump) reaches the same data the site does.

    .venv/bin/python -m docstore serve var/embedded-mongo.sqlite3 [--host 127.0.0.1] [--port 27017] [--db cms]

It prints its `mongodb://` URI and serves until SIGTERM or Ctrl-C. It has no authentication: it
listens on loopback unless `--host` says otherwise, and warns when it does."""

from __future__ import annotations

import argparse
import signal
import sys
import threading


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docstore")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve a store over MongoDB's wire protocol")
    serve.add_argument("path", help="the store's file (the site's MONGODB_EMBEDDED_PATH)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    serve.add_argument("--port", type=int, default=27017, help="port (default 27017; 0 picks a free one)")
    serve.add_argument("--db", default="cms", help="the database stored in PATH (the site's MONGODB_DB)")
    serve.add_argument("--cursor-timeout", type=float, default=600.0,
                       help="seconds before an idle cursor is closed (default 600, a server's default)")
    serve.add_argument("--shardsvr", action="store_true",
                       help="a shard of `docstore cluster` (its router sets the sharded collections' keys)")
    cluster = commands.add_parser(
        "cluster", help="a sharded cluster simulated on this machine, for tests and measurement only")
    cluster.add_argument("path", help="a directory: one store per shard, and the config store")
    cluster.add_argument("--shards", type=int, default=3, help="how many shard servers (default 3)")
    cluster.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    cluster.add_argument("--port", type=int, default=0, help="the router's port (default 0: a free one)")
    cluster.add_argument("--chunk-size", type=int, default=128,
                         help="MiB routed into a chunk before it is split (default 128, a cluster's default)")
    args = parser.parse_args(argv)
    if args.command == "cluster":
        return _cluster(args)

    from docstore.server.commands import Engine
    from docstore.server.tcp import Server

    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: listening on {args.host}: the server has no authentication; anyone who reaches "
              "this address can read and change every database", file=sys.stderr)
    if args.shardsvr:
        from docstore.cluster.shard import ShardEngine

        engine = ShardEngine(args.path, db=args.db, cursor_timeout=args.cursor_timeout)
    else:
        engine = Engine(args.path, db=args.db, cursor_timeout=args.cursor_timeout)
    server = Server(engine, args.host, args.port)

    def stop(*_):
        threading.Thread(target=server.shutdown, daemon=True).start()

    # Handlers first, then the URI: whoever reads the URI may stop the server at once.
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(server.uri, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        engine.client.close()
    return 0


def _cluster(args) -> int:
    """The router in this process, the shards as child processes; the router's URI on stdout."""
    from docstore.cluster.launch import Cluster

    print("docstore cluster: a simulated sharded cluster for tests and measurement, never a deployment",
          file=sys.stderr)
    cluster = Cluster(args.path, args.shards, host=args.host, port=args.port,
                      chunk_size=int(args.chunk_size * 1024 * 1024))

    def stop(*_):
        threading.Thread(target=cluster.server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(cluster.uri, flush=True)
    cluster.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
