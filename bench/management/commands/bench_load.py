"""`python manage.py bench_load`: this site and django-comments-xtd under wrk (bench/load.py)."""

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = ("Start this site as `make serve` does and django-comments-xtd under gunicorn with the same thread, "
            "drive each endpoint with wrk, report req/s, p50 and p99 (docs/bench/load.json, docs/benchmarks.md).")

    def add_arguments(self, parser):
        parser.add_argument("--size", type=int, default=10_000, help="Comments in the generated discussion.")
        parser.add_argument("--duration", type=int, default=20, help="Seconds of wrk per endpoint and side.")
        parser.add_argument("--connections", type=int, default=8)
        parser.add_argument("--threads", type=int, default=2, help="wrk threads.")
        parser.add_argument("--json", metavar="FILE", help="Write the result as JSON (docs/bench/load.json).")
        parser.add_argument("--docs", metavar="FILE", help="Rewrite the load section of this report (docs/benchmarks.md).")
        parser.add_argument("--via-server", action="store_true",
                            help="Ours reaches its store through `python -m docstore serve` instead of in process; "
                                 "--docs then writes the section setting this run beside docs/bench/load.json's.")
        parser.add_argument("--only", metavar="NAMES",
                            help="Only these endpoints, comma-separated: topic, deep, api, followers, post "
                                 "(no bytes per comment, no --docs).")
        parser.add_argument("--rounds", type=int, default=1,
                            help="Measure each endpoint this many times, the sides alternating; report the median.")
        parser.add_argument("--post-rounds", type=int, default=None,
                            help="The same for the POST rows (default: --rounds), each embedded round into a "
                                 "discussion of its own.")

    def handle(self, *args, **options):
        from bench.load import run

        for name in ("size", "duration", "connections", "threads", "rounds", "post_rounds"):
            if options[name] is not None and options[name] < 1:
                raise CommandError(f"--{name.replace('_', '-')} must be at least 1")
        try:
            run(size=options["size"], duration=options["duration"], connections=options["connections"],
                threads=options["threads"], json_path=options["json"], docs_path=options["docs"],
                rounds=options["rounds"], post_rounds=options["post_rounds"], only=_names(options["only"]),
                via_server=options["via_server"],
                log=lambda line: (self.stdout.write(line), self.stdout.flush()))
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc


def _names(value: str | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(n.strip() for n in value.split(",") if n.strip())
