#!/usr/bin/env bash
# Starts the Erlang JSON filter: compiles it into .lab/erlang/ebin when the sources are newer
# (build.sh), then runs the VM in the foreground, non-blocking start so that SIGTERM stops it cleanly.
#   json_filter.sh --port 21003 --backend 127.0.0.1:21000 [--max-body N] [--max-head N]
#                  [--header-timeout-ms N] [--idle-timeout-ms N] [--backend-timeout-ms N] [--acceptors N]
#                  [--max-connections N] [--send-timeout-ms N] [--schedulers N] [--name SERVICE]
# --schedulers: the VM's scheduler threads, 1 by default, as nginx's one worker and the single
# Node process: on the lab's 2 cores, shared with the load generator and the backend, a second
# scheduler cost 16-23 % more CPU per relayed request, for the same throughput at the
# seed's 2500 connections (measured: servers/README.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ebin="$here/../../.lab/erlang/ebin"
"$here/build.sh"
args=()
schedulers=1
while [ $# -gt 0 ]; do
  case "$1" in
    --port) args+=(-json_filter port "$2") ;;
    --backend) args+=(-json_filter backend_host "\"${2%:*}\"" -json_filter backend_port "${2##*:}") ;;
    --max-body) args+=(-json_filter max_body "$2") ;;
    --max-head) args+=(-json_filter max_head "$2") ;;
    --header-timeout-ms) args+=(-json_filter header_timeout_ms "$2") ;;
    --idle-timeout-ms) args+=(-json_filter idle_timeout_ms "$2") ;;
    --backend-timeout-ms) args+=(-json_filter backend_timeout_ms "$2") ;;
    --acceptors) args+=(-json_filter acceptors "$2") ;;
    --max-connections) args+=(-json_filter max_connections "$2") ;;
    --send-timeout-ms) args+=(-json_filter send_timeout_ms "$2") ;;
    --schedulers)
      [[ "$2" =~ ^[1-9][0-9]?$ ]] || { echo "json_filter.sh: --schedulers is a whole number from 1 to 99, got '$2'" >&2; exit 2; }
      schedulers="$2" ;;
    --name) args+=(-lab_service "$2") ;; # only for the command line: how process-exporter finds it
    *) echo "json_filter.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift 2
done
# No busy-waiting schedulers: spinning would take CPU from whatever shares the cores (k6, the
# backend) and make the VM's CPU time no measure of its work (CPU per request is judged).
exec erl -noshell -noinput +K true +S "$schedulers" +sbwt none +sbwtdcpu none +sbwtdio none -pa "$ebin" "${args[@]}" \
  -eval 'case application:ensure_all_started(json_filter) of {ok, _} -> ok; E -> io:format(standard_error, "json_filter: ~p~n", [E]), halt(1) end'
