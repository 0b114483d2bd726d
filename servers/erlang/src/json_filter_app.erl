%% The application: reads its settings (from -json_filter Key Value on the command line)
%% and starts the supervision tree.
-module(json_filter_app).
-behaviour(application).
-export([start/2, stop/1]).

start(_Type, _Args) ->
    json_filter_sup:start_link().

stop(_State) ->
    ok.
