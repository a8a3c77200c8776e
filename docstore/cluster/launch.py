"""Starting and stopping a simulated cluster: N shard servers (`python -m docstore serve`, one
process and one docstore file each under PATH: shard0.sqlite3, ...), the config store
(PATH/config.sqlite3) and the router, a wire server in this process that answers as mongos.
For tests and measurement only: a deployment runs MongoDB's own mongos, config servers and
shards (docs/mongodb.md, "A simulated sharded cluster")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from docstore.cluster.router import DEFAULT_CHUNK_SIZE, Router
from docstore.server.tcp import Server
from docstore.surface.client import Client


class RouterServer(Server):
    @property
    def uri(self) -> str:
        host, port = self.server_address[:2]
        return f"mongodb://{host}:{port}/"


class Cluster:
    def __init__(self, path: str, shards: int, *, host: str = "127.0.0.1", port: int = 0,
                 chunk_size: int = DEFAULT_CHUNK_SIZE, cursor_timeout: float = 600.0):
        if shards < 1:
            raise ValueError("a cluster needs at least one shard")
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.processes: list[subprocess.Popen] = []
        hosts = {}
        try:
            for i in range(shards):
                process = subprocess.Popen(
                    [sys.executable, "-m", "docstore", "serve", str(self.path / f"shard{i}.sqlite3"), "--host", host,
                     "--port", "0", "--cursor-timeout", str(cursor_timeout), "--shardsvr"],
                    stdout=subprocess.PIPE, text=True)
                self.processes.append(process)
            for i, process in enumerate(self.processes):
                uri = process.stdout.readline().strip()
                if not uri.startswith("mongodb://"):
                    raise RuntimeError(f"shard{i} did not start")
                hosts[f"shard{i}"] = uri[len("mongodb://"):].split("/", 1)[0]
            config = Client(str(self.path / "config.sqlite3"), default_db="config", tz_aware=False)
            self.router = Router(config, hosts, chunk_size=chunk_size, cursor_timeout=cursor_timeout)
            self.server = RouterServer(self.router, host, port)
        except BaseException:
            self._stop_shards()
            raise

    @property
    def uri(self) -> str:
        return self.server.uri

    def serve_forever(self) -> None:
        try:
            self.server.serve_forever(poll_interval=0.2)
        finally:
            self.close()

    def close(self) -> None:
        self.server.server_close()
        self.router.close()
        self._stop_shards()

    def _stop_shards(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
