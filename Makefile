# make demo: the classic suite on the lab's stacks, report in out/report.html. make test: everything
# CI checks. make demo-bench: loadlab bench against a private nginx.
# make bench, bench-mix, bench-replay, bench-rate, bench-ramp, bench-wsesslog, bench-scale,
# bench-wake: the benchmarks in BENCHMARKS.md.
# make bench-netem: netem beside loadlab's delay stage under Debian's stock kernel, in a VM
# (docs/lab.md).
# Each installs the Debian packages it needs first (Debian 12; sudo only when not root).

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

# Debian packages, by purpose. LAB_PACKAGES are what the lab's stacks run (loadlab stack):
# make test installs them, so that CI runs the lab's tests instead of skipping them.
LAB_PACKAGES   := nginx apache2 libapache2-mod-php php-fpm php-cgi php-cli php-mysql \
                  spawn-fcgi varnish hitch caddy mariadb-server mariadb-client wordpress \
                  wordpress-theme-twentytwentyone php-excimer
# php-excimer: `--profile` samples PHP's own stacks in the PHP tiers (the lab's php.ini
# prepends its profiler only then).
# iproute2: the link test puts a server in a network namespace behind a veth pair (as root).
# openssh: the `--host` tests run an sshd of their own in a namespace host, and ssh to it.
# python3-venv: the venv that holds kubernetes-validate (below).
# tmux: the live view's test drives it in a tmux pane (a real terminal).
# prometheus: it scrapes a `bench --metrics-listen` run (it::metrics).
# linux-perf: `run --profile` records the tiers' stacks with perf (run::profile).
TEST_PACKAGES  := $(LAB_PACKAGES) wrk apache2-utils httperf time chromium iproute2 python3 \
                  openssh-server openssh-client python3-venv tmux prometheus linux-perf
# The demo runs the classic suite, which uses every stack of the lab.
DEMO_PACKAGES  := $(LAB_PACKAGES)
BENCH_PACKAGES := nginx wrk apache2-utils httperf time python3 iproute2 openssl nghttp2-client valgrind \
                  gcc liburing-dev
# bench/netem-guest.sh boots Debian's kernel (which has netem) under qemu with this root shared.
NETEM_PACKAGES := $(LAB_PACKAGES) qemu-system-x86 busybox-static jq iproute2

# The test harness reads this: in CI a test whose server is missing fails instead of skipping.
ifneq ($(filter-out 0 false,$(CI)),)
export LOADLAB_REQUIRE_SERVERS := 1
endif

LOCKED := $(if $(wildcard Cargo.lock),--locked)

.PHONY: deps-test deps-demo deps-bench deps-lab deps-netem build test demo demo-bench bench bench-mix bench-replay lab-cycles bench-rate bench-wsesslog bench-agents bench-scale bench-wake bench-netem clean

# apt_install: install those of the packages in $(1) that are not installed yet; apt-get update
# runs only if something is missing, so a ready machine needs no network and no root. "dpkg -s"
# alone would also accept a removed package whose config files remain, hence the Status line.
define apt_install
	missing=(); \
	for p in $(1); do \
	  dpkg -s "$$p" 2>/dev/null | grep -x 'Status: install ok installed' >/dev/null \
	    || missing+=("$$p"); \
	done; \
	if (( $${#missing[@]} )); then \
	  sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "installing: $${missing[*]}"; \
	  $$sudo apt-get update; \
	  $$sudo env DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y --no-install-recommends "$${missing[@]}"; \
	fi
endef

# kubernetes-validate (PyPI) checks `loadlab agents k8s`'s manifests against the Kubernetes API's
# schemas offline (kubectl cannot without a cluster); Debian has no package of it, so it lives
# in a venv under target/, where the test looks for it. Installed once; pinned.
K8S_VALIDATE         := target/kubernetes-validate/bin/kubernetes-validate
K8S_VALIDATE_VERSION := 1.37.0

deps-test:
	@$(call apt_install,$(TEST_PACKAGES))
	@[ -x $(K8S_VALIDATE) ] || { \
	  python3 -m venv target/kubernetes-validate \
	  && target/kubernetes-validate/bin/pip install --quiet \
	       kubernetes-validate==$(K8S_VALIDATE_VERSION); }

deps-demo:
	@$(call apt_install,$(DEMO_PACKAGES))

deps-bench:
	@$(call apt_install,$(BENCH_PACKAGES))

deps-lab:
	@$(call apt_install,$(LAB_PACKAGES) python3)

deps-netem:
	@$(call apt_install,$(NETEM_PACKAGES))

build:
	cargo build --release $(LOCKED)

test: deps-test
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	# No module-level import circle anywhere; no function over 80 lines in any crate.
	python3 .ci/import-cycles.py
	python3 .ci/long-functions.py
	if cargo nextest --version >/dev/null 2>&1; then \
	  cargo nextest run --workspace --no-fail-fast; \
	else \
	  cargo test --workspace --no-fail-fast; \
	fi

# The default suite, `classic` (a short tour of the five classic experiments, under 5 minutes
# on 2 cores): stacks up one at a time, measured, stored in out/loadlab.db, report in
# out/report.html, the verdict printed at the end.
demo: deps-demo build
	target/release/loadlab run --suite classic --out out

# One quick `loadlab bench` against a private nginx, as text and as JSON (out/demo.json).
demo-bench: deps-bench build
	bench/demo.sh

bench: deps-bench build
	bench/vs-peers.sh

# The benchmarks of BENCHMARKS.md that are one script each, bench-NAME running bench/NAME.sh:
#   bench-mix       what a URL mix costs the client against one URL (bound: at most 10% more
#                   CPU per request)
#   bench-replay    a 100,000-line access log replayed at its own timing: lateness and memory
#   bench-wsesslog  httperf's --wsesslog sessions run by httperf and by loadlab: same requests,
#                   CPU per request
#   bench-ramp      a ramp 0..20,000 req/s against nginx second by second, and a fixed rate's
#                   CPU per request against main's build (BASELINE=...)
#   bench-scale     10,000 concurrent connections: really open (ss), errors, peak RSS; raises the
#                   open-file limit to what it needs, which takes root (or a hard limit already
#                   high enough)
#   bench-agents    one test from 4 agents on this machine: achieved against offered, start skew,
#                   what the coordination costs an agent
SCRIPT_BENCHES := mix replay wsesslog ramp scale agents
$(addprefix bench-,$(SCRIPT_BENCHES)): bench-%: deps-bench build
	bench/$*.sh

# Open-loop accuracy at 1k-20k req/s and client CPU per request against httperf.
bench-rate: deps-bench build
	bench/rate-accuracy.sh

# What one timer wake-up costs a sleeping thread here: the floor under on-time sends.
bench-wake: deps-bench
	bench/wake-cost.sh

# Every lab stack brought up and down 50 times: up-and-verify times, and no process left.
lab-cycles: deps-lab build
	bench/lab-cycles.sh

# Root, and KVM unless ACCEL=tcg (see docs/lab.md for a machine whose KVM cannot boot it).
bench-netem: deps-netem build
	bench/netem-guest.sh

clean:
	cargo clean
	rm -rf out
