%% The filter's settings, read once at start into persistent_term: a connection reads them per
%% request (the backend timeout) without application:get_env's table lookup and copy, which the
%% profile showed on every relay. Defaults of the settings json_filter.app.src does not list:
%% max_connections above the lab's largest closed run (5000 connections), two sockets each
%% (client and backend) within its 20000 open files; send_timeout_ms as nginx's send_timeout.
-module(json_filter_config).
-export([load/0, get/1]).

-define(DEFAULTS, #{max_connections => 8192, send_timeout_ms => 60000}).

load() ->
    Env = maps:from_list(application:get_all_env(json_filter)),
    maps:foreach(fun(K, V) -> persistent_term:put({?MODULE, K}, V) end, maps:merge(?DEFAULTS, Env)).

get(K) ->
    persistent_term:get({?MODULE, K}).
