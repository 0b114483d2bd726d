#!/usr/bin/env bash
# Compiles the Erlang JSON filter into .lab/erlang/ebin when its sources are newer than the
# build. json_filter.sh runs it before it starts the VM; the runner runs it first as the
# topology's `prepare` (as root in CI), since the filter itself then runs as an unprivileged
# user that cannot write .lab/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ebin="$here/../../.lab/erlang/ebin"
mkdir -p "$ebin"
if [ ! -f "$ebin/json_filter.app" ] || [ -n "$(find "$here/src" -newer "$ebin/json_filter.app" -print -quit)" ]; then
  erlc -o "$ebin" "$here"/src/*.erl
  cp "$here/src/json_filter.app.src" "$ebin/json_filter.app"
fi
