# The lab's recipes. Run them through ./labw (it installs just first) or with just itself.
# Knobs: experiment.knob=value (or knob=value); --quick[=N] compresses time by N (default 5).

set positional-arguments
set quiet
set shell := ["bash", "-uc"]

# List the recipes.
default:
    @{{just_executable()}} --list --unsorted

# Install the pinned toolchain (Debian packages, k6, Envoy, npm packages); a second run only checks.
setup:
    @bash lab/install.sh

# Only the Node packages: what the recipes that start nothing need on a fresh clone.
deps:
    @bash lab/install.sh npm

# Run the pinned k6 (.lab/bin/k6), e.g. `./labw k6 run k6/burst.js` against `./labw up burst`.
k6 *args: setup
    .lab/bin/k6 "$@"

# Run a suite (smoke, spike, soak, stress, load, breakpoint): stacks up, k6 streaming to the metrics stores, tables, stacks down; non-zero exit on a failed case.
test *args: setup
    node lab/cli/index.mjs test "$@"

# Print what the model expects for a suite, as JSON, starting nothing; --sensitivity: what it catches; --policy=FILE: a team's nginx.conf or Envoy bootstrap as the model reads and plans it.
expect *args: deps
    node lab/cli/index.mjs expect "$@"

# Rewrite what comes from the model and the topology: the tables in the READMEs and docs/, k6/lib/services.json, the suites the `test` line names.
docs: deps
    node lab/cli/index.mjs docs

# Start one experiment's stack and leave it up; prints `name url` per endpoint.
up experiment *args: setup
    node lab/cli/index.mjs up "$@"

# Benchmark an experiment's stack (one with lab/bench/<experiment>.mjs) or k6 itself (`bench k6`): prints figures, judges nothing.
bench experiment *args: setup
    node lab/cli/index.mjs bench "$@"

# A flame graph (PNG, and the SVG beside it) from a `perf record -g` file: servers/README.md shows how the filters' were made.
flamegraph perf_data png *args: setup
    node lab/bench/flamegraph.mjs "$@"

# Stop whatever `up` started (the metrics stores stay up).
down: deps
    node lab/cli/index.mjs down

# The metrics stores (InfluxDB, Prometheus, process-exporter): up (kept between runs), down, status.
metrics action *args: setup
    node lab/cli/index.mjs metrics "$@"

# Run every panel query of every dashboard against the stores for a run (default: the latest); a panel with no data fails.
panels *testid: setup
    node lab/cli/index.mjs panels "$@"

# A run's cases judged from Prometheus alone, by testid (a run made elsewhere: name its plan); for the kinds that can.
verdict *args: setup
    node lab/cli/index.mjs verdict "$@"

# The results site from results/ (results/site/index.html): build it, or `serve [--port=N]`, `compare <run> [<baseline>]`, `baseline <run>`, `check [testid]` (its pages in chromium).
results *args: deps
    node lab/cli/index.mjs results "$@"

# Rewrite the dashboards' JSON from dashboards/src (committed; a unit test checks it is current).
dashboards: deps
    node dashboards/build.mjs

# Delete the stores' data (.lab/data), the results and rendered configs: lists them, deletes with --yes; refused while a run is live.
clean *args: deps
    node lab/cli/index.mjs clean "$@"

# Render an experiment's configs into .lab/rendered/ for `docker compose --profile <experiment> up`.
render experiment *args: deps
    node lab/cli/index.mjs render "$@"

# Every policy of test/policies/tests.json: smoke and spike pass, one number changed in the stack's copy fails the cases it names (test/policies/README.md).
policies *args: setup
    node lab/cli/index.mjs policies "$@"

# One team's limit in every proxy the lab knows, one load against each, one table and one page: `compare-proxies spike --policy=FILE [--quick] [--record]` (docs/compare-proxies.md).
compare-proxies *args: setup
    node lab/cli/index.mjs compare-proxies "$@"

# Make a team's nginx.conf or Envoy bootstrap an experiment of the repository: `new <name> --policy=FILE` (its test beside its config, with history and CI).
new *args: deps
    node lab/cli/index.mjs new "$@"

# One experiment's test as a standalone k6 script (k6 modules only) for `k6 run`, `k6 archive`, k6-operator or Grafana Cloud k6: `export spike/burst --quick --out=burst.js` (a relative FILE is under the repository).
export *args: deps
    node lab/cli/index.mjs export "$@"

# List every experiment's knobs and their seed defaults.
knobs *experiment: deps
    node lab/cli/index.mjs knobs "$@"

# Lint and format check: ESLint's recommended rules (eslint.config.js) and Prettier (.prettierrc.json) over every module, and the Erlang sources through erlc +warnings_as_errors (setup installs Erlang); `lint --fix` rewrites what ESLint and Prettier can.
lint *args: setup
    node lab/cli/index.mjs lint "$@"

# Unit tests: the model against the seeds' tables, the runner, template rendering, the topology.
unit: setup
    node --test test/*.test.mjs

# What CI runs: lint, unit tests, then smoke (every stack up briefly) with its dashboards' panels and pages, then spike, stress/caching, breakpoint and load/cdn in quick time, then teams' nginx and Envoy policies (test/policies/: limits from the http level, TLS and HTTP/2, limit_conn, a geo allow-list, a regex location, Envoy descriptors, an HAProxy stick table, HAProxy over TLS keyed by a header, HAProxy with a maxconn and its table in a backend, HAProxy tracking twice, an HAProxy tarpit, HAProxy per client and path with its limit in a variable, an HAProxy flag in a table of its own, HAProxy's conn_cur and conn_rate per request, HAProxy's rate-limit sessions, a small HAProxy table its oldest entries trashed from, a Traefik rateLimit in TOML, Traefik limits per site name from a TOML static config) in spike --quick, each with its panels, and their pages in chromium, then one limit in all four proxies (compare-proxies --quick, its page in chromium). Spike at x2: at x5 burst's b0-2rps arrives 33 ms inside nginx's spacing, which k6 on 2 busy cores missed 3 times in a fresh-clone CI.
ci: lint unit
    node lab/cli/index.mjs test smoke
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs results check
    node lab/cli/index.mjs test spike --quick=2
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test stress/caching --quick
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test breakpoint --quick
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test load/cdn --quick
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/fixtures/policies/gateway.conf
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/envoy-route-bucket.yaml
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/tls-http2.conf
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs results check
    node lab/cli/index.mjs test spike --quick --policy=test/policies/conn-and-req.conf
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/map-geo-allowlist.conf
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/regex-location.conf
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs results check
    node lab/cli/index.mjs test spike --quick --policy=test/policies/envoy-descriptors.yaml
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/haproxy-rate.cfg
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/haproxy-tls-key.cfg
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/haproxy-table-backend.cfg
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/haproxy-two-trackers.cfg
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/haproxy-tarpit.cfg
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/haproxy-per-path.cfg
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/haproxy-abuse-flag.cfg
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/haproxy-flag-table.cfg
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/haproxy-conn-limits.cfg
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/haproxy-tcp-content.cfg
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/haproxy-sessions.cfg
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/haproxy-small-table.cfg
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs results check
    node lab/cli/index.mjs test spike --quick --policy=test/policies/traefik-per-minute.toml
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/traefik-forwarded.yml
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/traefik-routers.yml
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/traefik-entrypoint.yml
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/traefik-in-flight.yml
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs test spike --quick --policy=test/policies/traefik-by-host.toml
    node lab/cli/index.mjs panels
    node lab/cli/index.mjs results check
    node lab/cli/index.mjs compare-proxies spike --quick --policy=test/policies/traefik-rate.yml
