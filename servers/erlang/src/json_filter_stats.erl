%% Counters shared by every connection process, without a process in the way.
-module(json_filter_stats).
-export([init/0, incr/1, to_json/0, to_prometheus/0]).

-define(NAMES, [requests, relayed, filtered, rejected, backend_errors, connections]).

init() ->
    persistent_term:put(?MODULE, counters:new(length(?NAMES), [write_concurrency])).

incr(Name) ->
    counters:add(persistent_term:get(?MODULE), index(Name, ?NAMES, 1), 1).

to_json() ->
    C = persistent_term:get(?MODULE),
    Pairs = [{atom_to_binary(N), counters:get(C, I)} || {N, I} <- lists:zip(?NAMES, lists:seq(1, length(?NAMES)))],
    jiffy:encode({[{<<"pid">>, list_to_binary(os:getpid())} | Pairs]}).

%% The same counters in Prometheus text format (GET /metrics), named as the Node filter's:
%% json_filter_requests_total{outcome} and json_filter_connections_total.
to_prometheus() ->
    C = persistent_term:get(?MODULE),
    N = fun(Name) -> integer_to_binary(counters:get(C, index(Name, ?NAMES, 1))) end,
    Outcome = fun(Name, Label) -> [<<"json_filter_requests_total{outcome=\"">>, Label, <<"\"} ">>, N(Name), <<"\n">>] end,
    iolist_to_binary([<<"# TYPE json_filter_requests_total counter\n">>,
                      Outcome(relayed, <<"relayed">>), Outcome(filtered, <<"filtered">>),
                      Outcome(rejected, <<"rejected">>), Outcome(backend_errors, <<"backend_error">>),
                      <<"# TYPE json_filter_connections_total counter\njson_filter_connections_total ">>, N(connections), <<"\n">>]).

index(N, [N | _], I) -> I;
index(N, [_ | T], I) -> index(N, T, I + 1).
