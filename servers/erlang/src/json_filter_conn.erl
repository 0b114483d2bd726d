%% One process per client connection. The VM's own HTTP parser ({packet, http_bin}) reads the
%% request line and headers; the body is read raw by Content-Length. Requests on a connection
%% are handled one after another, so pipelined requests are answered in order.
%% Limits: the headers must arrive within header_timeout_ms of the request line, and stay under
%% max_head bytes (431); bodies need Content-Length (chunked: 411) and stay under max_body (413).
-module(json_filter_conn).
-export([start/1, init/1]).

-record(cfg, {max_body, max_head, header_timeout, idle_timeout}).

start(Sock) ->
    proc_lib:spawn(?MODULE, init, [Sock]).

init(Sock) ->
    receive go -> ok after 5000 -> exit(normal) end,
    json_filter_stats:incr(connections),
    Env = fun(K) -> {ok, V} = application:get_env(json_filter, K), V end,
    Cfg = #cfg{max_body = Env(max_body), max_head = Env(max_head),
               header_timeout = Env(header_timeout_ms), idle_timeout = Env(idle_timeout_ms)},
    %% packet_size is only a memory guard: a line over it makes the VM drop the connection with
    %% no chance to answer, so it sits well above max_head and the 431 comes from our own count.
    ok = inet:setopts(Sock, [{packet, http_bin}, {packet_size, max(65536, 4 * Cfg#cfg.max_head)}]),
    next_request(Sock, Cfg).

next_request(Sock, Cfg) ->
    case gen_tcp:recv(Sock, 0, Cfg#cfg.idle_timeout) of
        {ok, {http_request, Method, Uri, Version}} ->
            Deadline = now_ms() + Cfg#cfg.header_timeout,
            Path = path(Uri),
            headers(Sock, Cfg, #{method => Method, path => Path, version => Version,
                                 headers => #{}, size => byte_size(Path) + 16, deadline => Deadline});
        {ok, {http_error, _}} -> fail(Sock, 400, <<"malformed request line\n">>);
        {ok, _} -> fail(Sock, 400, <<"malformed request\n">>);
        {error, emsgsize} -> fail(Sock, 431, <<"request line too long\n">>);
        {error, _} -> gen_tcp:close(Sock)
    end.

headers(Sock, Cfg, Req = #{headers := H, size := Size, deadline := Deadline}) ->
    case gen_tcp:recv(Sock, 0, max(0, Deadline - now_ms())) of
        {ok, {http_header, _, Name, _, Value}} ->
            Key = string:lowercase(if is_atom(Name) -> atom_to_binary(Name); true -> Name end),
            Size2 = Size + byte_size(Key) + byte_size(Value) + 4,
            case Size2 > Cfg#cfg.max_head of
                true -> fail(Sock, 431, <<"request header fields too large\n">>);
                false -> headers(Sock, Cfg, Req#{headers := H#{Key => Value}, size := Size2})
            end;
        {ok, http_eoh} -> body(Sock, Cfg, Req);
        {ok, {http_error, _}} -> fail(Sock, 400, <<"malformed header line\n">>);
        {error, emsgsize} -> fail(Sock, 431, <<"request header fields too large\n">>);
        {error, _} -> gen_tcp:close(Sock) % timeout (a slow client) or gone
    end.

body(Sock, Cfg, Req = #{headers := H}) ->
    case {maps:is_key(<<"transfer-encoding">>, H), maps:get(<<"content-length">>, H, <<"0">>)} of
        {true, _} -> fail(Sock, 411, <<"chunked bodies are not accepted: send Content-Length\n">>);
        {false, CL} ->
            case catch binary_to_integer(CL) of
                Len when is_integer(Len), Len >= 0, Len =< Cfg#cfg.max_body -> read_body(Sock, Cfg, Req, Len);
                Len when is_integer(Len), Len > Cfg#cfg.max_body -> fail(Sock, 413, <<"body too large\n">>);
                _ -> fail(Sock, 400, <<"bad Content-Length\n">>)
            end
    end.

read_body(Sock, Cfg, Req, 0) -> dispatch(Sock, Cfg, Req, <<>>);
read_body(Sock, Cfg, Req = #{deadline := Deadline}, Len) ->
    ok = inet:setopts(Sock, [{packet, raw}]),
    Got = gen_tcp:recv(Sock, Len, max(0, Deadline - now_ms()) + Cfg#cfg.header_timeout),
    ok = inet:setopts(Sock, [{packet, http_bin}]),
    case Got of
        {ok, Body} -> dispatch(Sock, Cfg, Req, Body);
        {error, _} -> gen_tcp:close(Sock)
    end.

dispatch(Sock, Cfg, Req = #{method := Method, path := Path}, Body) ->
    json_filter_stats:incr(requests),
    {Status, RBody} = handle(Method, Path, Body),
    Keep = keep_alive(Req),
    send(Sock, Status, RBody, Keep),
    case Keep of
        true -> next_request(Sock, Cfg);
        false -> gen_tcp:close(Sock)
    end.

handle('GET', <<"/healthz">>, _) -> {200, <<"ok\n">>};
handle('GET', <<"/stats">>, _) -> {200, json_filter_stats:to_json()};
handle('POST', Path, Body) ->
    case decode(Body) of
        invalid ->
            json_filter_stats:incr(rejected),
            {400, <<"invalid JSON\n">>};
        Doc ->
            case json_filter_rule:should_relay(Doc) of
                false ->
                    json_filter_stats:incr(filtered),
                    {204, <<>>};
                true ->
                    case json_filter_pool:request(Path, Body) of
                        {ok, Status, RBody} -> json_filter_stats:incr(relayed), {Status, RBody};
                        {error, timeout} -> json_filter_stats:incr(backend_errors), {504, <<"backend timed out\n">>};
                        {error, Why} -> json_filter_stats:incr(backend_errors), {502, iolist_to_binary(io_lib:format("backend: ~p~n", [Why]))}
                    end
            end
    end;
handle(_, _, _) ->
    json_filter_stats:incr(rejected),
    {405, <<"POST a JSON document\n">>}.

decode(Body) ->
    try jiffy:decode(Body, [return_maps]) catch _:_ -> invalid end.

fail(Sock, Status, Msg) ->
    json_filter_stats:incr(rejected),
    send(Sock, Status, Msg, false),
    linger(Sock).

%% Closing with unread bytes in the receive buffer makes the kernel send a reset, and the client
%% may lose the answer: stop writing, read and drop what is still coming (for at most a second
%% or 1 MiB), then close.
linger(Sock) ->
    gen_tcp:shutdown(Sock, write),
    inet:setopts(Sock, [{packet, raw}]),
    drain(Sock, now_ms() + 1000, 1 bsl 20),
    gen_tcp:close(Sock).

drain(Sock, Deadline, Budget) when Budget > 0 ->
    case gen_tcp:recv(Sock, 0, max(0, Deadline - now_ms())) of
        {ok, Data} -> drain(Sock, Deadline, Budget - byte_size(Data));
        {error, _} -> ok
    end;
drain(_, _, _) -> ok.

send(Sock, Status, Body, Keep) ->
    Len = case Status of 204 -> []; _ -> [<<"content-length: ">>, integer_to_binary(byte_size(Body)), <<"\r\n">>] end,
    Conn = case Keep of true -> []; false -> <<"connection: close\r\n">> end,
    gen_tcp:send(Sock, [<<"HTTP/1.1 ">>, integer_to_binary(Status), <<" ">>, reason(Status), <<"\r\n">>,
                        Len, Conn, <<"\r\n">>, case Status of 204 -> <<>>; _ -> Body end]).

keep_alive(#{version := Version, headers := H}) ->
    Conn = string:lowercase(maps:get(<<"connection">>, H, <<>>)),
    case Version of
        {1, 1} -> binary:match(Conn, <<"close">>) =:= nomatch;
        _ -> binary:match(Conn, <<"keep-alive">>) =/= nomatch
    end.

path({abs_path, P}) -> P;
path(_) -> <<"/">>.

reason(200) -> <<"OK">>; reason(204) -> <<"No Content">>; reason(400) -> <<"Bad Request">>;
reason(405) -> <<"Method Not Allowed">>; reason(411) -> <<"Length Required">>;
reason(413) -> <<"Content Too Large">>; reason(431) -> <<"Request Header Fields Too Large">>;
reason(502) -> <<"Bad Gateway">>; reason(504) -> <<"Gateway Timeout">>; reason(_) -> <<"Status">>.

now_ms() -> erlang:monotonic_time(millisecond).
