%% Supervision tree: the stats counters, the backend pool and the listener (which owns the
%% listening socket and its acceptors). rest_for_one: a new pool restarts the listener too.
-module(json_filter_sup).
-behaviour(supervisor).
-export([start_link/0, init/1]).

start_link() ->
    supervisor:start_link({local, ?MODULE}, ?MODULE, []).

init([]) ->
    json_filter_config:load(),
    json_filter_stats:init(),
    Children = [#{id => pool, start => {json_filter_pool, start_link, []}},
                #{id => listener, start => {json_filter_listener, start_link, []}, type => supervisor}],
    {ok, {#{strategy => rest_for_one, intensity => 10, period => 10}, Children}}.
