%% Counters shared by every connection process, without a process in the way.
-module(json_filter_stats).
-export([init/0, incr/1, to_json/0]).

-define(NAMES, [requests, relayed, filtered, rejected, backend_errors, connections]).

init() ->
    persistent_term:put(?MODULE, counters:new(length(?NAMES), [write_concurrency])).

incr(Name) ->
    counters:add(persistent_term:get(?MODULE), index(Name, ?NAMES, 1), 1).

to_json() ->
    C = persistent_term:get(?MODULE),
    Pairs = [{atom_to_binary(N), counters:get(C, I)} || {N, I} <- lists:zip(?NAMES, lists:seq(1, length(?NAMES)))],
    jiffy:encode({[{<<"pid">>, list_to_binary(os:getpid())} | Pairs]}).

index(N, [N | _], I) -> I;
index(N, [_ | T], I) -> index(N, T, I + 1).
