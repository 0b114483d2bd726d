%% What an Erlang filter cannot cost less than, for servers/README.md: one backend connection per
%% client connection, sockets in {active, 8} as the filter's client socket, and
%% - relay: bytes passed through both ways, unparsed;
%% - minimal: each request's head read by the VM's HTTP parser (erlang:decode_packet/3, as the
%%   filter does) for its Content-Length only, its body through jiffy and the filter rule,
%%   relayed or answered 204; the backend's answer passed back (204 as a constant).
%% No limits, no timeouts, no validation beyond that: a measuring stick, not a server to run:
%%   erlc floor.erl && erl -noshell +S 1 -pa ../../../.lab/erlang/ebin -eval 'floor:start(minimal, 21902, 21000)'
-module(floor).
-export([start/3, acceptor/3, conn/3]).

-define(NO_CONTENT, <<"HTTP/1.1 204 No Content\r\n\r\n">>).

start(Mode, Port, BackendPort) when Mode =:= relay; Mode =:= minimal ->
    {ok, L} = gen_tcp:listen(Port, [binary, {ip, {127, 0, 0, 1}}, {active, false}, {reuseaddr, true},
                                    {backlog, 4096}, {nodelay, true}]),
    [spawn(?MODULE, acceptor, [Mode, L, BackendPort]) || _ <- lists:seq(1, 4)],
    receive after infinity -> ok end.

acceptor(Mode, L, BackendPort) ->
    {ok, S} = gen_tcp:accept(L),
    P = spawn(?MODULE, conn, [Mode, S, BackendPort]),
    ok = gen_tcp:controlling_process(S, P),
    P ! go,
    acceptor(Mode, L, BackendPort).

conn(Mode, S, BackendPort) ->
    receive go -> ok end,
    {ok, B} = gen_tcp:connect({127, 0, 0, 1}, BackendPort, [binary, {active, 8}, {nodelay, true}]),
    ok = inet:setopts(S, [{active, 8}]),
    loop(Mode, S, B, <<>>).

loop(Mode, S, B, Buf) ->
    receive
        {tcp, S, D} when Mode =:= relay -> ok = gen_tcp:send(B, D), loop(Mode, S, B, Buf);
        {tcp, S, D} -> loop(Mode, S, B, requests(<<Buf/binary, D/binary>>, S, B));
        {tcp, B, <<"HTTP/1.1 204", _/binary>>} when Mode =:= minimal -> ok = gen_tcp:send(S, ?NO_CONTENT), loop(Mode, S, B, Buf);
        {tcp, B, D} -> ok = gen_tcp:send(S, D), loop(Mode, S, B, Buf);
        {tcp_passive, X} -> ok = inet:setopts(X, [{active, 8}]), loop(Mode, S, B, Buf);
        {tcp_closed, _} -> gen_tcp:close(S), gen_tcp:close(B);
        {tcp_error, _, _} -> gen_tcp:close(S), gen_tcp:close(B)
    end.

%% minimal: the complete requests in Buf handled; what is left of it returned.
requests(Buf, S, B) ->
    case erlang:decode_packet(http_bin, Buf, []) of
        {ok, {http_request, _, _, _}, Rest} ->
            case content_length(Rest, 0) of
                {Len, Body0} when byte_size(Body0) >= Len ->
                    <<Body:Len/binary, Next/binary>> = Body0,
                    Doc = try jiffy:decode(Body, [return_maps]) catch _:_ -> invalid end,
                    case json_filter_rule:should_relay(Doc) of
                        true ->
                            ok = gen_tcp:send(B, [<<"POST /filter HTTP/1.1\r\nhost: backend\r\ncontent-type: application/json\r\ncontent-length: ">>,
                                                  integer_to_binary(Len), <<"\r\n\r\n">>, Body]);
                        false -> ok = gen_tcp:send(S, ?NO_CONTENT)
                    end,
                    requests(Next, S, B);
                _ -> Buf
            end;
        _ -> Buf
    end.

%% The Content-Length and the bytes after the head, or more.
content_length(Buf, Len) ->
    case erlang:decode_packet(httph_bin, Buf, []) of
        {ok, {http_header, _, 'Content-Length', _, V}, Rest} -> content_length(Rest, binary_to_integer(V));
        {ok, {http_header, _, _, _, _}, Rest} -> content_length(Rest, Len);
        {ok, http_eoh, Rest} -> {Len, Rest};
        _ -> more
    end.
