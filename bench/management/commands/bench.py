"""`python manage.py bench`: the benchmark harness (bench/). Parses arguments, calls bench.runner.run."""

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = ("Measure MongoDB round trips, documents read and time per operation as data grows, "
            "and compare with django-comments-xtd. See docs/benchmarks.md.")

    def add_arguments(self, parser):
        parser.add_argument("--quick", action="store_true", help="Small sizes (finishes in a few minutes).")
        parser.add_argument("--json", metavar="FILE", help="Write the rows as JSON to FILE ('-' for stdout).")
        parser.add_argument("--plots", metavar="DIR", help="Draw PNG plots into DIR (needs matplotlib).")
        parser.add_argument("--docs", metavar="FILE", help="Write the Markdown report (e.g. docs/benchmarks.md).")
        parser.add_argument("--baseline", metavar="FILE",
                            help="A bench JSON to quote as 'before' beside this run's worst rows in the report.")
        parser.add_argument("--no-explain", action="store_true",
                            help="Skip keys/documents examined (no explain of each command).")
        parser.add_argument("--only", metavar="GROUPS", help="Comma-separated case groups: comments,social,feeds,search,peer.")
        parser.add_argument("--update", metavar="FILE",
                            help="A bench JSON of the same mode (e.g. docs/bench/benchmarks.json) whose rows of the "
                                 "--only groups are replaced by this run's; --json, --plots and --docs are then "
                                 "written from the merged result, which records what was re-measured when.")

    def handle(self, *args, **options):
        from bench.runner import CASE_GROUPS, run

        only = None
        if options["only"]:
            only = tuple(g.strip() for g in options["only"].split(",") if g.strip())
            unknown = sorted(set(only) - set(CASE_GROUPS))
            if unknown:
                raise CommandError(f"unknown case group(s) {', '.join(unknown)}; choose from {', '.join(CASE_GROUPS)}")
        log = self.stdout.write if options["json"] != "-" else self.stderr.write
        run(mode="quick" if options["quick"] else "full", json_path=options["json"], plots_dir=options["plots"],
            docs_path=options["docs"], only=only, log=log,
            explain=not options["no_explain"], baseline_path=options["baseline"], update_path=options["update"])
