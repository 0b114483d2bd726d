#!/usr/bin/env bash
# Compiles the Erlang JSON filter into .lab/erlang/ebin when its sources are newer than the
# build. json_filter.sh runs it before it starts the VM; the runner runs it first as the
# topology's `prepare` (as root in CI), since the filter itself then runs as an unprivileged
# user that cannot write .lab/. Several filters may start at once (the tests): one builds, under
# a lock, into a fresh folder that replaces the old one whole, so none reads a half-written build.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lab="$here/../../.lab/erlang"
ebin="$lab/ebin"
current() { [ -f "$ebin/json_filter.app" ] && [ -z "$(find "$here/src" -newer "$ebin/json_filter.app" -print -quit)" ]; }
current && exit 0
mkdir -p "$lab"
exec 9>"$lab/build.lock"
flock 9
current && exit 0
fresh=$(mktemp -d "$lab/ebin.XXXXXX")
erlc +warnings_as_errors -o "$fresh" "$here"/src/*.erl
cp "$here/src/json_filter.app.src" "$fresh/json_filter.app"
chmod 755 "$fresh"
rm -rf "$ebin.old"
[ -d "$ebin" ] && mv "$ebin" "$ebin.old"
mv "$fresh" "$ebin"
rm -rf "$ebin.old"
