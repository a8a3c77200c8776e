# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1:8000

.PHONY: run serve secret-key test test-wire test-cluster mongosh conformance faults bench bench-update bench-quick bench-load bench-bytes bench-live bench-load-server bench-scale bench-cluster bench-import lint install install-dev indexes clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed: requirements.txt | $(VENV)/bin/python
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt $(VENV)/.installed
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

$(VENV)/.installed-bench: requirements.txt requirements-bench.txt $(VENV)/.installed
	$(PY) -m pip install --quiet -r requirements-bench.txt
	touch $@

# Isso, the load run's second peer, in a virtualenv of its own (bench/isso_peer.py). When it does not
# install, the run goes on without it and says so in its section of docs/benchmarks.md.
ISSO_VENV ?= .venv-isso
$(ISSO_VENV)/.installed: bench/isso-requirements.txt
	@{ $(PYTHON) -m venv $(ISSO_VENV) && $(ISSO_VENV)/bin/python -m pip install --quiet -r bench/isso-requirements.txt \
		&& touch $@; } || { rm -rf $(ISSO_VENV); echo "make bench-load: Isso did not install (above): the run goes on without it"; }

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

## make run: virtualenv, install, migrate, demo content, serve on http://$(HOST)/
# DEBUG is on for the embedded engine, OFF against a real MONGODB_URI unless DEBUG=1 is
# asked for (the key is the site's .secret_key then, or SECRET_KEY); error pages mask URI
# passwords either way.
RUN_DEBUG := $(if $(DEBUG),$(DEBUG),$(if $(MONGODB_URI),0,1))
# The address e-mails name and link to (SITE_URL): the one served on, unless SITE_URL is set.
RUN_SITE_URL := $(if $(SITE_URL),$(SITE_URL),http://$(HOST))
run: install secret-key
	DEBUG=$(RUN_DEBUG) $(PY) manage.py migrate --noinput
	DEBUG=$(RUN_DEBUG) $(PY) manage.py mongo_indexes
	DEBUG=$(RUN_DEBUG) SITE_URL=$(RUN_SITE_URL) $(PY) manage.py rundemo $(HOST)

## The site's SECRET_KEY: generated into .secret_key (mode 600, outside git) on first use unless
## SECRET_KEY is set; the settings read it, so `.venv/bin/python manage.py COMMAND` needs no
## DEBUG=1 nor SECRET_KEY after `make run` or `make serve` (docs/configuration.md).
secret-key: install
	@test -n "$$SECRET_KEY" || test -s .secret_key || (umask 077; $(PY) -c "import secrets; print(secrets.token_urlsafe(50))" > .secret_key)

## make serve: the production configuration on http://$(HOST)/: gunicorn with uvicorn's ASGI
## worker class (cms_site/asgi.py: pages in WEB_THREADS threads through Django's WSGI handler, topic
## pages' live streams as async views that hold no thread), DEBUG off, collected static files served by WhiteNoise (docs/deploy.md).
## Workers: WEB_CONCURRENCY, 4 on a MongoDB server, 2 on the embedded engine (they share its file).
SERVE_ENV = DEBUG=0 SITE_URL=$(RUN_SITE_URL)
serve: install secret-key
	@test -n "$$CACHE_URL" || echo "make serve: no CACHE_URL, so each worker counts the rate limits on its own (N workers: N times each limit); set CACHE_URL=redis://HOST:6379/1 (docs/configuration.md)"
	$(SERVE_ENV) $(PY) manage.py migrate --noinput
	$(SERVE_ENV) $(PY) manage.py collectstatic --noinput -v 0
	$(SERVE_ENV) $(PY) manage.py mongo_indexes
	$(SERVE_ENV) $(PY) manage.py load_demo
	$(SERVE_ENV) $(VENV)/bin/gunicorn cms_site.asgi:application --bind $(HOST) \
		--worker-class uvicorn_worker.UvicornWorker \
		--workers $${WEB_CONCURRENCY:-$$( [ -n "$$MONGODB_URI" ] && echo 4 || echo 2 )} \
		--timeout 30 --access-logfile -

## make test: the same set-up, then the whole suite, spread over TEST_WORKERS processes
## (pytest-xdist; `auto`, one per CPU, by default; TEST_WORKERS=0 runs it in this process)
TEST_WORKERS ?= auto
test: install-dev
	$(PY) manage.py check --settings=tests.settings
	$(PY) -m pytest -n $(TEST_WORKERS)

## make test-wire: the storage suites once more through pymongo against the embedded engine served over
## MongoDB's wire protocol (`python -m docstore serve` on a free loopback port): a MONGODB_URI site's code path
test-wire: install-dev
	TEST_WORKERS=$(TEST_WORKERS) $(PY) -m tests.wire_suite

## make mongosh: MongoDB's shell from the npm registry (the version tools/mongosh/package-lock.json pins) into
## tools/mongosh/node_modules, for tests/docstore/test_mongosh.py and for operators (docs/mongodb.md); needs Node.js
mongosh:
	cd tools/mongosh && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error

## make test-cluster: the contract, query-shape and fault suites through pymongo against a sharded cluster
## simulated on this machine (`python -m docstore cluster`, 3 shards; tests and measurement only), the
## declared shard keys applied by `mongo_shard` before each test: the code path of a site whose MONGODB_URI
## is a mongos (CI runs it after test-wire)
test-cluster: install-dev
	TEST_WORKERS=$(TEST_WORKERS) $(PY) -m tests.cluster_suite

## make conformance: MongoDB's driver specification tests (../shared/mongodb-specs, CRUD and index
## management) against the embedded engine, and against mongomock as a control; rewrites docs/conformance.md
## (per file: passed, expected failure and why, skipped and why). Fails when a result differs from the
## expected-failure table in tests/docstore/spec_runner.py.
conformance: install-dev
	$(PY) -m tests.docstore.spec_runner --write docs/conformance.md

# Every MongoDB operation of every write failed in turn, in every storage strategy (make test
# fails the writes in the document strategy): docs/development.md, "Fault injection".
faults: install-dev
	FAULTS_FULL=1 $(PY) -m pytest tests/faults

## make bench: full-size benchmark; rewrites docs/benchmarks.md and its plots in docs/bench/
# The report quotes docs/bench/before-issue7.json (the managers before the storage rework, measured in quick mode) as "before".
# The bench runs with its own throw-away databases; SECRET_KEY only has to exist. Its settings are
# cms_site/bench_settings.py: the site's, plus the harness's app, which the site does not install.
BENCH_ENV = SECRET_KEY=$${SECRET_KEY:-bench-only-insecure-key} DEBUG=0 PYTHONUNBUFFERED=1 DJANGO_SETTINGS_MODULE=cms_site.bench_settings
bench: $(VENV)/.installed-bench
	$(BENCH_ENV) $(PY) manage.py bench --json docs/bench/benchmarks.json --plots docs/bench --docs docs/benchmarks.md \
		--baseline docs/bench/before-issue7.json

## make bench-update ONLY=feeds: re-measure only these case groups (comma-separated: comments,social,feeds,peer)
## at full size and merge them into docs/bench/benchmarks.json, docs/benchmarks.md and its plots
bench-update: $(VENV)/.installed-bench
	@test -n "$(ONLY)" || { echo "make bench-update ONLY=feeds (comments,social,feeds,peer)"; exit 2; }
	$(BENCH_ENV) $(PY) manage.py bench --only $(ONLY) --update docs/bench/benchmarks.json \
		--json docs/bench/benchmarks.json --plots docs/bench --docs docs/benchmarks.md \
		--baseline docs/bench/before-issue7.json

## make bench-quick: small sizes (a few minutes), rows in bench-out/
bench-quick: $(VENV)/.installed-bench
	mkdir -p bench-out
	$(BENCH_ENV) $(PY) manage.py bench --quick --json bench-out/quick.json --plots bench-out

## make bench-load: this site as `make serve` runs it, django-comments-xtd and Isso under gunicorn, the same
## 10,000-comment thread (ours in each strategy), each endpoint driven by wrk (Debian's package `wrk`) for 20 s:
## req/s, p50, p99, bytes per comment, the store's WAL peak and each worker's RSS growth from the reads to
## the posts (their bounds: 64 MB, 1.5x) into docs/bench/load.json and the "Load run" section of
## docs/benchmarks.md (about 14 minutes; stops by itself). Each POST row is measured POST_ROUNDS times (3), the
## sides alternating, and the median round reported; xtd posts beside every strategy's row, Isso beside the first.
## make bench-load ONLY=floor,post [ROUNDS=3] [POST_ROUNDS=1]: only those rows (topic, deep, api, followers, post,
## floor), ours and the peers', printed and not written to the docs; ROUNDS measures each row that many times
## (POST_ROUNDS the POST rows, ROUNDS by default with ONLY), sides alternating
bench-load: $(VENV)/.installed-bench $(ISSO_VENV)/.installed
	@command -v wrk >/dev/null || { echo "make bench-load needs wrk (Debian: apt-get install wrk)"; exit 2; }
	$(BENCH_ENV) $(PY) manage.py bench_load $(if $(ROUNDS),--rounds $(ROUNDS)) \
		$(if $(POST_ROUNDS),--post-rounds $(POST_ROUNDS),$(if $(ONLY),,--post-rounds 3)) \
		$(if $(ONLY),--only $(ONLY),--json docs/bench/load.json --docs docs/benchmarks.md)

## make bench-load-server: the same load run with ours reaching its store through `python -m docstore serve`
## (MONGODB_URI) instead of in process; the section of docs/benchmarks.md that sets it beside docs/bench/load.json
bench-load-server: $(VENV)/.installed-bench $(ISSO_VENV)/.installed
	@command -v wrk >/dev/null || { echo "make bench-load-server needs wrk (Debian: apt-get install wrk)"; exit 2; }
	$(BENCH_ENV) $(PY) manage.py bench_load --via-server --json docs/bench/load-server.json --docs docs/benchmarks.md

## make bench-bytes: only the bytes per comment of the load run (bench/footprint.py, each strategy and xtd on the
## same 10,000-comment thread; Isso's figure kept from the last bench-load), into docs/bench/load.json and its
## section of docs/benchmarks.md (about a minute)
bench-bytes: $(VENV)/.installed-bench
	$(BENCH_ENV) $(PY) -m bench.footprint update --json docs/bench/load.json --docs docs/benchmarks.md

## make bench-scale: the embedded engine holding 100,000 and 1,000,000 comments as `make serve` runs it: store size,
## get_db() opening, start-up to the first served page, RSS, and a GET's p50/p99 alone and while a writer posts
## without pause; into docs/bench/scale.json and the "Scale run" section of docs/benchmarks.md (SIZES=100000 for one
## size; the 1M load takes the most time)
SIZES ?= 100000,1000000
bench-scale: $(VENV)/.installed-bench
	@command -v wrk >/dev/null || { echo "make bench-scale needs wrk (Debian: apt-get install wrk)"; exit 2; }
	$(BENCH_ENV) $(PY) manage.py bench_scale --sizes $(SIZES) --json docs/bench/scale.json --docs docs/benchmarks.md

## make bench-cluster: the case studies' workloads (a celebrity posting, one huge discussion in each comment strategy,
## many small discussions, feeds under each fan-out strategy, a day's credit flows) at 1/CLUSTER_SCALE of their sizes,
## routed through the simulated cluster's chunk, split and balancer code at 3, 10 and 30 shards (bench/cluster_model.py,
## checked against `python -m docstore cluster` by tests/bench/test_cluster_model.py): docs/scale.md, its plot in
## docs/bench/ and docs/bench/scale-cluster.json (a few minutes)
CLUSTER_SCALE ?= 100
bench-cluster: $(VENV)/.installed-bench
	$(BENCH_ENV) $(PY) manage.py bench_cluster --scale $(CLUSTER_SCALE) --json docs/bench/scale-cluster.json \
		--docs docs/scale.md --plots docs/bench

## make bench-import: `comments_import disqus` of generated Disqus exports (IMPORT_SIZES comments, 100,000 and
## 1,000,000 by default; the files are kept in bench-out/) into a fresh embedded store, one size at a time:
## comments/s and peak RSS into docs/bench/imports.json and the "Imports" section of docs/benchmarks.md
## (1-2 hours on 2 cores; niced)
IMPORT_SIZES ?= 100000 1000000
bench-import: $(VENV)/.installed-bench
	mkdir -p bench-out
	for n in $(IMPORT_SIZES); do \
		test -s bench-out/disqus-$$n.xml || $(PY) bench/import_disqus.py generate $$n bench-out/disqus-$$n.xml || exit 1; \
		$(BENCH_ENV) nice -n 10 $(PY) bench/import_disqus.py import bench-out/disqus-$$n.xml --json docs/bench/imports.json || exit 1; \
	done
	$(PY) bench/import_disqus.py report --json docs/bench/imports.json --docs docs/benchmarks.md

## make bench-live: 1,000 open live streams (bench/live_streams.py) against the topic page's p99 under wrk,
## with and without them, on `make serve`'s configuration; into docs/bench/live.json and docs/benchmarks.md
bench-live: $(VENV)/.installed-bench install-dev
	@command -v wrk >/dev/null || { echo "make bench-live needs wrk (Debian: apt-get install wrk)"; exit 2; }
	$(BENCH_ENV) $(PY) -m bench.live_streams --json docs/bench/live.json --docs docs/benchmarks.md

lint: install-dev
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) $(ISSO_VENV) db.sqlite3 var staticfiles .pytest_cache .hypothesis
