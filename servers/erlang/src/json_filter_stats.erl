%% Counters shared by every connection process, without a process in the way; and the number of
%% connections open, for the connection cap (max_connections).
-module(json_filter_stats).
-export([init/0, incr/1, to_json/0, to_prometheus/0, admit/1, leave/0]).

-define(NAMES, [requests, relayed, filtered, rejected, backend_errors, connections, refused]).
-define(OPEN, {?MODULE, open}).

init() ->
    persistent_term:put(?MODULE, counters:new(length(?NAMES), [write_concurrency])),
    persistent_term:put(?OPEN, atomics:new(1, [{signed, true}])).

%% Counts the calling connection in if fewer than Max are open: true, or false (not counted).
%% Two at the cap at once may both be turned away: never more than Max are let in.
admit(Max) ->
    Open = persistent_term:get(?OPEN),
    case atomics:add_get(Open, 1, 1) =< Max of
        true -> true;
        false -> atomics:sub(Open, 1, 1), false
    end.

%% An admitted connection is gone.
leave() ->
    atomics:sub(persistent_term:get(?OPEN), 1, 1).

incr(Name) ->
    counters:add(persistent_term:get(?MODULE), index(Name, ?NAMES, 1), 1).

to_json() ->
    C = persistent_term:get(?MODULE),
    Pairs = [{atom_to_binary(N), counters:get(C, I)} || {N, I} <- lists:zip(?NAMES, lists:seq(1, length(?NAMES)))],
    jiffy:encode({[{<<"pid">>, list_to_binary(os:getpid())} | Pairs]}).

%% The same counters in Prometheus text format (GET /metrics), named as the Node filter's:
%% json_filter_requests_total{outcome}, json_filter_connections_total and
%% json_filter_connections_refused_total.
to_prometheus() ->
    C = persistent_term:get(?MODULE),
    N = fun(Name) -> integer_to_binary(counters:get(C, index(Name, ?NAMES, 1))) end,
    Outcome = fun(Name, Label) -> [<<"json_filter_requests_total{outcome=\"">>, Label, <<"\"} ">>, N(Name), <<"\n">>] end,
    iolist_to_binary([<<"# TYPE json_filter_requests_total counter\n">>,
                      Outcome(relayed, <<"relayed">>), Outcome(filtered, <<"filtered">>),
                      Outcome(rejected, <<"rejected">>), Outcome(backend_errors, <<"backend_error">>),
                      <<"# TYPE json_filter_connections_total counter\njson_filter_connections_total ">>, N(connections), <<"\n">>,
                      <<"# TYPE json_filter_connections_refused_total counter\njson_filter_connections_refused_total ">>, N(refused), <<"\n">>]).

index(N, [N | _], I) -> I;
index(N, [_ | T], I) -> index(N, T, I + 1).
