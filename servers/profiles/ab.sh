#!/usr/bin/env bash
# Two servers loaded at the same time, for servers/README.md: a wrk -t1 on each (the same
# connections and document), 8 s after 2 s of warm-up, and each one's CPU per request from /proc
# (its process and children) over the same 8 s; the order the two are started in swapped every
# round. What a slow spell of the host does falls on both, so their ratio moves less than two
# rounds one after the other.
#   ab.sh ROUNDS PORT_X PID_X PORT_REF PID_REF [CONNECTIONS=200]
# LAB_BODY: the document posted (stacks/json-filter/wrk-post.lua). Prints per round X's and the
# reference's CPU per request (us) and X's over the reference's.
set -euo pipefail
[ $# -ge 5 ] || { echo "usage: ab.sh ROUNDS PORT_X PID_X PORT_REF PID_REF [CONNECTIONS]" >&2; exit 2; }
rounds=$1 px=$2 ix=$3 pr=$4 ir=$5 conns=${6:-200}
for n in "$rounds" "$px" "$ix" "$pr" "$ir" "$conns"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "ab.sh: '$n' is not a whole number" >&2; exit 2; }
done
: "${LAB_BODY:?LAB_BODY names the document to post}"
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ticks() { # CPU ticks of a process and its children
  local t=0 p a
  for p in $1 $(pgrep -P "$1" || true); do
    read -r a < "/proc/$p/stat" 2>/dev/null || continue
    set -- ${a##*) }
    t=$((t + ${12} + ${13}))
  done
  echo $t
}
load() { wrk -t1 -c"$conns" -d"$2" -s "$root/stacks/json-filter/wrk-post.lua" "http://127.0.0.1:$1/filter"; }
hz=$(getconf CLK_TCK)
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then first=($px $pr); else first=($pr $px); fi
  load "${first[0]}" 2s > /dev/null & load "${first[1]}" 2s > /dev/null & wait
  x0=$(ticks "$ix"); r0=$(ticks "$ir")
  load "${first[0]}" 8s > "$out/${first[0]}" & load "${first[1]}" 8s > "$out/${first[1]}" & wait
  x1=$(ticks "$ix"); r1=$(ticks "$ir")
  nx=$(awk '/requests in/{print $1}' "$out/$px"); nr=$(awk '/requests in/{print $1}' "$out/$pr")
  awk -v r="$r" -v dx=$((x1 - x0)) -v dr=$((r1 - r0)) -v nx="$nx" -v nr="$nr" -v hz="$hz" 'BEGIN {
    ux = dx / hz * 1e6 / nx; ur = dr / hz * 1e6 / nr
    printf "round %d: %.1f us per request, reference %.1f us, ratio %.3f\n", r, ux, ur, ux / ur }'
done
