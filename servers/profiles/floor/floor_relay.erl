%% What an Erlang filter cannot cost less than, for servers/README.md: one backend connection per
%% client connection, bytes passed through both ways unparsed, sockets in {active, 8} as the
%% filter's. A measuring stick, not a server to run:
%%   erlc floor_relay.erl && erl -noshell +S 1 -eval 'floor_relay:start(21902, 21000)'
-module(floor_relay).
-export([start/2, acceptor/2, conn/2]).

start(Port, BackendPort) ->
    {ok, L} = gen_tcp:listen(Port, [binary, {ip, {127, 0, 0, 1}}, {active, false}, {reuseaddr, true},
                                    {backlog, 4096}, {nodelay, true}]),
    [spawn(?MODULE, acceptor, [L, BackendPort]) || _ <- lists:seq(1, 4)],
    receive after infinity -> ok end.

acceptor(L, BackendPort) ->
    {ok, S} = gen_tcp:accept(L),
    P = spawn(?MODULE, conn, [S, BackendPort]),
    ok = gen_tcp:controlling_process(S, P),
    P ! go,
    acceptor(L, BackendPort).

conn(S, BackendPort) ->
    receive go -> ok end,
    {ok, B} = gen_tcp:connect({127, 0, 0, 1}, BackendPort, [binary, {active, 8}, {nodelay, true}]),
    ok = inet:setopts(S, [{active, 8}]),
    loop(S, B).

loop(S, B) ->
    receive
        {tcp, S, D} -> ok = gen_tcp:send(B, D), loop(S, B);
        {tcp, B, D} -> ok = gen_tcp:send(S, D), loop(S, B);
        {tcp_passive, X} -> ok = inet:setopts(X, [{active, 8}]), loop(S, B);
        {tcp_closed, _} -> gen_tcp:close(S), gen_tcp:close(B);
        {tcp_error, _, _} -> gen_tcp:close(S), gen_tcp:close(B)
    end.
