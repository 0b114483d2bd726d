%% The listening socket and a pool of acceptor processes, under one supervisor: each acceptor
%% waits in accept/1 and hands every new connection to a fresh connection process.
-module(json_filter_listener).
-behaviour(supervisor).
-export([start_link/0, init/1, acceptor_start_link/2, acceptor/2]).

start_link() ->
    supervisor:start_link(?MODULE, []).

init([]) ->
    {ok, Port} = application:get_env(json_filter, port),
    {ok, N} = application:get_env(json_filter, acceptors),
    LSock = case gen_tcp:listen(Port, [binary, {ip, {127, 0, 0, 1}}, {active, false}, {reuseaddr, true},
                                       {backlog, 4096}, {nodelay, true}, {packet, raw}]) of
                {ok, S} -> S;
                {error, Why} -> exit({cannot_listen, Port, Why})
            end,
    Acceptors = [#{id => {acceptor, I}, start => {?MODULE, acceptor_start_link, [LSock, I]}} || I <- lists:seq(1, N)],
    {ok, {#{strategy => one_for_one, intensity => 100, period => 1}, Acceptors}}.

acceptor_start_link(LSock, I) ->
    {ok, proc_lib:spawn_link(?MODULE, acceptor, [LSock, I])}.

acceptor(LSock, I) ->
    case gen_tcp:accept(LSock) of
        {ok, Sock} ->
            Pid = json_filter_conn:start(Sock),
            ok = gen_tcp:controlling_process(Sock, Pid),
            Pid ! go,
            acceptor(LSock, I);
        {error, closed} ->
            exit(normal);
        {error, _} ->
            acceptor(LSock, I)
    end.
