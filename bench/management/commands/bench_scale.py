"""`python manage.py bench_scale`: the embedded engine at 100k and 1M comments (bench/scale.py)."""

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = ("Set up a `make serve` site holding a large discussion (100k and 1M comments), measure its store size, "
            "opening, start-up, RSS and a GET's latency alone and during a write burst (docs/bench/scale.json, "
            "docs/benchmarks.md).")

    def add_arguments(self, parser):
        parser.add_argument("--sizes", default="100000,1000000", help="Comma-separated discussion sizes.")
        parser.add_argument("--duration", type=int, default=20, help="Seconds of each wrk run.")
        parser.add_argument("--connections", type=int, default=2, help="wrk connections of the readers.")
        parser.add_argument("--json", metavar="FILE", help="Write the result as JSON (docs/bench/scale.json).")
        parser.add_argument("--docs", metavar="FILE", help="Rewrite the scale section of this report (docs/benchmarks.md).")
        parser.add_argument("--keep", metavar="DIR", help="Keep each size's site in DIR/<size>/ and measure a site kept "
                                                          "there before instead of loading it again.")

    def handle(self, *args, **options):
        from bench.scale import run

        try:
            sizes = [int(s) for s in options["sizes"].split(",") if s.strip()]
        except ValueError:
            raise CommandError("--sizes: comma-separated whole numbers") from None
        if not sizes or min(sizes) < 1 or options["duration"] < 1 or options["connections"] < 1:
            raise CommandError("--sizes, --duration and --connections must be at least 1")
        try:
            run(sizes=sizes, duration=options["duration"], connections=options["connections"], json_path=options["json"],
                docs_path=options["docs"], keep=options["keep"], log=lambda line: (self.stdout.write(line), self.stdout.flush()))
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc
