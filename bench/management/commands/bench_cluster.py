"""`python manage.py bench_cluster`: the scale report on a modelled cluster (bench/cluster_scale.py, docs/scale.md)."""

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = ("Run the case studies' workloads at 1/SCALE of their sizes, route their documents and operations "
            "through the simulated cluster's chunk code at 3, 10 and 30 shards, and write docs/scale.md.")

    def add_arguments(self, parser):
        parser.add_argument("--scale", type=int, default=100, help="Run the workloads at 1/SCALE of the case studies' sizes.")
        parser.add_argument("--shards", default="3,10,30", help="Comma-separated shard counts.")
        parser.add_argument("--only", default="", help="Comma-separated workloads (celebrity, one discussion, ...).")
        parser.add_argument("--json", metavar="FILE", help="Write the result as JSON (docs/bench/scale-cluster.json).")
        parser.add_argument("--docs", metavar="FILE", help="Write the report (docs/scale.md).")
        parser.add_argument("--plots", metavar="DIR", help="Write the report's plots here (docs/bench).")
        parser.add_argument("--from", dest="source", metavar="FILE",
                            help="Write --docs and --plots from a result --json wrote before, without running.")

    def handle(self, *args, **options):
        import json
        import os

        from bench import cluster_report, cluster_scale
        from bench.counting import OpCounter
        from bench.runner import TINY, Bench, django_test_database

        try:
            shards = [int(s) for s in options["shards"].split(",") if s.strip()]
        except ValueError:
            raise CommandError("--shards: comma-separated whole numbers") from None
        if not shards or min(shards) < 1 or options["scale"] < 1:
            raise CommandError("--shards and --scale must be at least 1")
        only = {w.strip() for w in options["only"].split(",") if w.strip()}
        known = {w[0] for w in cluster_scale.WORKLOADS}
        if only - known:
            raise CommandError(f"--only: unknown workloads {sorted(only - known)}; known: {sorted(known)}")

        def log(line):
            self.stdout.write(line)
            self.stdout.flush()

        if options["source"]:
            with open(options["source"]) as fh:
                result = json.load(fh)
            result["rows"] = [{**row, "shards": int(row["shards"])} for row in result["rows"]]
            # The declared keys in their field order (a JSON file may hold them sorted by name).
            from core.managers import declared_shard_keys

            result["keys"] = declared_shard_keys()
            if options["docs"]:
                cluster_report.write(result, options["docs"], plots=options["plots"])
            return

        with django_test_database():
            bench = Bench(sizes=TINY, counter=OpCounter(), mode="cluster", log=log)
            result = cluster_scale.run(bench, scale=options["scale"], shard_counts=shards, only=only, log=log)
        result["machine"] = f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end"
        if options["json"]:
            with open(options["json"], "w") as fh:
                json.dump(result, fh, indent=1, default=str)  # key patterns keep their field order
        if options["docs"]:
            cluster_report.write(result, options["docs"], plots=options["plots"])
        log(f"bench_cluster: {result['seconds']} s ({result['cpu_seconds']} s CPU)")
