%% One process per client connection. Its socket is in {active, N} mode: the driver keeps the
%% socket in the poll set and sends what it reads as messages, N at a time, instead of a recv
%% call per chunk (each recv that found nothing armed and disarmed the poll: 1.8 epoll_ctl and
%% 0.9 empty reads per relayed request, measured: see servers/README.md). The chunks go through
%% the VM's own HTTP parser in-process (erlang:decode_packet/3).
%% Requests on a connection are handled one after another, so pipelined ones are answered in order.
%% Limits: the headers must arrive within header_timeout_ms of the request's first byte and stay
%% under max_head bytes (431); bodies need Content-Length (chunked: 411), under max_body (413).
%% Clients that would hold the filter (issue 17): an answer the client does not take within
%% send_timeout_ms closes the connection (a blocked send held the process and socket for ever;
%% the blocking send is also the write backpressure: nothing more is read meanwhile), and over
%% max_connections open connections a new one gets 503 and is closed.
-module(json_filter_conn).
-export([start/1, init/1]).

-record(cfg, {max_body, max_head, header_timeout, idle_timeout}).

%% Chunks the driver delivers before the process re-arms the socket. It bounds what a client can
%% queue in the process's mailbox while an answer is being sent or relayed (the backpressure):
%% N chunks of at most the socket's buffer each.
-define(ACTIVE, 8).

start(Sock) ->
    proc_lib:spawn(?MODULE, init, [Sock]).

init(Sock) ->
    receive go -> ok after 5000 -> exit(normal) end,
    json_filter_stats:incr(connections),
    ok = inet:setopts(Sock, [{packet, raw}, {send_timeout, setting(send_timeout_ms)}, {send_timeout_close, true}, {active, ?ACTIVE}]),
    case json_filter_stats:admit(setting(max_connections)) of
        true ->
            try serve(Sock) after json_filter_stats:leave() end;
        false ->
            json_filter_stats:incr(refused),
            send(Sock, 503, <<"too many connections\n">>, false),
            linger(Sock)
    end.

serve(Sock) ->
    Cfg = #cfg{max_body = setting(max_body), max_head = setting(max_head),
               header_timeout = setting(header_timeout_ms), idle_timeout = setting(idle_timeout_ms)},
    next_request(Sock, Cfg, <<>>).

setting(K) -> json_filter_config:get(K).

%% The next chunk from the client within Timeout ms: {ok, Data} | {error, closed | timeout | Why}.
recv(Sock, Timeout) ->
    json_filter_sock:recv(Sock, ?ACTIVE, Timeout).

%% Buf: bytes received and not used yet (a pipelined request may already be in it).
next_request(Sock, Cfg, <<>>) ->
    case recv(Sock, Cfg#cfg.idle_timeout) of
        {ok, Data} -> request_line(Sock, Cfg, Data, now_ms() + Cfg#cfg.header_timeout);
        {error, _} -> close(Sock)
    end;
next_request(Sock, Cfg, Buf) ->
    request_line(Sock, Cfg, Buf, now_ms() + Cfg#cfg.header_timeout).

request_line(Sock, Cfg, Buf, Deadline) ->
    case erlang:decode_packet(http_bin, Buf, []) of
        {ok, {http_request, Method, Uri, Version}, Rest} ->
            case strict_request_line(consumed(Buf, Rest)) of
                ok ->
                    Path = path(Uri),
                    headers(Sock, Cfg, Rest, #{method => Method, path => Path, version => Version, headers => #{},
                                               size => byte_size(Path) + 16, deadline => Deadline});
                {Status, Msg} -> fail(Sock, Status, Msg)
            end;
        {ok, _, _} -> fail(Sock, 400, <<"malformed request line\n">>);
        {more, _} when byte_size(Buf) > Cfg#cfg.max_head -> fail(Sock, 431, <<"request line too long\n">>);
        {more, _} -> more(Sock, Buf, Deadline, fun(B) -> request_line(Sock, Cfg, B, Deadline) end);
        {error, _} -> fail(Sock, 400, <<"malformed request line\n">>)
    end.

headers(Sock, Cfg, Buf, Req = #{headers := H, size := Size, deadline := Deadline}) ->
    case erlang:decode_packet(httph_bin, Buf, []) of
        {ok, {http_header, _, Name, _, Value}, Rest} ->
            Key = key(Name),
            Size2 = Size + byte_size(Key) + byte_size(Value) + 4,
            case {Size2 > Cfg#cfg.max_head, strict_field(Key, Value, consumed(Buf, Rest))} of
                {true, _} -> fail(Sock, 431, <<"request header fields too large\n">>);
                {false, ok} -> headers(Sock, Cfg, Rest, Req#{headers := add_field(Key, Value, H), size := Size2});
                {false, {Status, Msg}} -> fail(Sock, Status, Msg)
            end;
        {ok, http_eoh, Rest} when byte_size(Buf) - byte_size(Rest) =/= 2 -> fail(Sock, 400, <<"malformed header line\n">>);
        {ok, http_eoh, Rest} ->
            case strict_host(Req) of
                ok -> body(Sock, Cfg, Rest, Req);
                {Status, Msg} -> fail(Sock, Status, Msg)
            end;
        {ok, _, _} -> fail(Sock, 400, <<"malformed header line\n">>);
        {more, _} when Size + byte_size(Buf) > Cfg#cfg.max_head -> fail(Sock, 431, <<"request header fields too large\n">>);
        {more, _} -> more(Sock, Buf, Deadline, fun(B) -> headers(Sock, Cfg, B, Req) end);
        {error, _} -> fail(Sock, 400, <<"malformed header line\n">>)
    end.

%% More bytes before the deadline, or the connection is closed (a slow client, or gone).
more(Sock, Buf, Deadline, Next) ->
    case recv(Sock, max(0, Deadline - now_ms())) of
        {ok, Data} -> Next(<<Buf/binary, Data/binary>>);
        {error, _} -> close(Sock)
    end.

body(Sock, Cfg, Buf, Req = #{headers := H}) ->
    case {maps:is_key(<<"transfer-encoding">>, H), maps:get(<<"content-length">>, H, <<"0">>)} of
        {true, _} -> fail(Sock, 411, <<"chunked bodies are not accepted: send Content-Length\n">>);
        {false, CL} ->
            case digits(CL) andalso byte_size(CL) =< 15 andalso binary_to_integer(CL) of
                false -> fail(Sock, 400, <<"bad Content-Length\n">>);
                Len when Len =< Cfg#cfg.max_body -> read_body(Sock, Cfg, Buf, Req, Len);
                _ -> fail(Sock, 413, <<"body too large\n">>)
            end
    end.

read_body(Sock, Cfg, Buf, Req, Len) when byte_size(Buf) >= Len ->
    <<Body:Len/binary, Rest/binary>> = Buf,
    dispatch(Sock, Cfg, Req, Body, Rest);
read_body(Sock, Cfg, Buf, Req = #{deadline := Deadline}, Len) ->
    case recv(Sock, max(0, Deadline - now_ms()) + Cfg#cfg.header_timeout) of
        {ok, Data} -> read_body(Sock, Cfg, <<Buf/binary, Data/binary>>, Req, Len);
        {error, _} -> close(Sock)
    end.

dispatch(Sock, Cfg, Req = #{method := Method, path := Path}, Body, Rest) ->
    json_filter_stats:incr(requests),
    {Status, RBody} = handle(Method, Path, Body),
    Keep = keep_alive(Req),
    %% A send that fails (the client gone, or not reading for send_timeout_ms) ends the connection.
    case send(Sock, Status, RBody, Keep) of
        ok when Keep -> next_request(Sock, Cfg, Rest);
        _ -> close(Sock)
    end.

handle('GET', <<"/healthz">>, _) -> {200, <<"ok\n">>};
handle('GET', <<"/stats">>, _) -> {200, json_filter_stats:to_json()};
handle('GET', <<"/metrics">>, _) -> {200, json_filter_stats:to_prometheus()};
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
    drain(Sock, now_ms() + 1000, 1 bsl 20),
    close(Sock).

drain(Sock, Deadline, Budget) when Budget > 0 ->
    case recv(Sock, max(0, Deadline - now_ms())) of
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
    Conn = json_filter_ascii:lower(maps:get(<<"connection">>, H, <<>>)),
    case Version >= {1, 1} of
        true -> binary:match(Conn, <<"close">>) =:= nomatch;
        false -> binary:match(Conn, <<"keep-alive">>) =/= nomatch
    end.

path({abs_path, P}) -> P;
path(_) -> <<"/">>.

%% --- What RFC 9112 rejects and the VM's parser lets through (the Node filter's rules) ---

%% The bytes the parser took for one line: it accepts bare LF, and tells nothing of spacing.
consumed(Buf, Rest) -> binary:part(Buf, 0, byte_size(Buf) - byte_size(Rest)).

%% method SP request-target SP HTTP/D.D CRLF, single spaces, a visible-ASCII target; the VM's
%% parser has checked the method. Another major version than 1 -> 505.
strict_request_line(Line) ->
    Bad = {400, <<"malformed request line\n">>},
    case binary:split(Line, <<" ">>, [global]) of
        [_, Target, <<"HTTP/", Major, ".", Minor, "\r\n">>] when Target =/= <<>> ->
            case {visible(Target), is_digit(Major) andalso is_digit(Minor)} of
                {true, true} when Major =:= $1 -> ok;
                {true, true} -> {505, <<"HTTP version not supported: use HTTP/1.1\n">>};
                _ -> Bad
            end;
        _ -> Bad
    end.

%% name: value CRLF, with a non-empty name and a value free of control characters other than
%% HTAB (NUL, CR and LF among them; a folded line shows up here as CR LF in the value).
strict_field(Key, Value, Line) ->
    Crlf = binary:longest_common_suffix([Line, <<"\r\n">>]) =:= 2,
    case Key =/= <<>> andalso Crlf andalso field_value(Value) of
        true -> ok;
        false -> {400, <<"malformed header line\n">>}
    end.

%% A repeated field becomes one comma-joined value, as RFC 9110 combines them: a second
%% Content-Length or Host then fails its own check.
add_field(Key, Value, H) ->
    case H of
        #{Key := Old} -> H#{Key := <<Old/binary, ", ", Value/binary>>};
        _ -> H#{Key => Value}
    end.

%% HTTP/1.1 requires exactly one Host, with a value that can be an authority (uri-host[:port]).
strict_host(#{version := {1, 0}, headers := H}) when not is_map_key(<<"host">>, H) -> ok;
strict_host(#{headers := #{<<"host">> := Host}}) ->
    case authority(Host) of
        true -> ok;
        false -> {400, <<"bad Host\n">>}
    end;
strict_host(_) -> {400, <<"Host is required in HTTP/1.1\n">>}.

%% The character checks walk the binary itself (they went through lists: binary_to_list and
%% lists:all took 12 % of the filter's time in the profile).
visible(<<C, R/binary>>) when C >= 16#21, C =< 16#7e -> visible(R);
visible(<<>>) -> true;
visible(_) -> false.
field_value(<<C, R/binary>>) when C =:= $\t; C >= 16#20, C =/= 16#7f -> field_value(R);
field_value(<<>>) -> true;
field_value(_) -> false.
authority(<<C, R/binary>>) when C >= $a, C =< $z; C >= $A, C =< $Z; C >= $0, C =< $9 -> authority(R);
authority(<<C, R/binary>>) when C =:= $-; C =:= $.; C =:= $_; C =:= $~; C =:= $!; C =:= $$; C =:= $&; C =:= $';
                                 C =:= $(; C =:= $); C =:= $*; C =:= $+; C =:= $,; C =:= $;; C =:= $=; C =:= $%;
                                 C =:= $:; C =:= $[; C =:= $] -> authority(R);
authority(<<>>) -> true;
authority(_) -> false.
digits(<<>>) -> false;
digits(B) -> all_digits(B).
all_digits(<<C, R/binary>>) when C >= $0, C =< $9 -> all_digits(R);
all_digits(<<>>) -> true;
all_digits(_) -> false.
is_digit(C) -> C >= $0 andalso C =< $9.

%% A header name as a lowercase binary key. The VM's parser names the common headers with atoms
%% ('Host', 'Content-Length'); the ones every request carries are spelled out, the rest lowered.
key('Host') -> <<"host">>;
key('Content-Length') -> <<"content-length">>;
key('Content-Type') -> <<"content-type">>;
key('Connection') -> <<"connection">>;
key('User-Agent') -> <<"user-agent">>;
key('Accept') -> <<"accept">>;
key(Name) when is_atom(Name) -> json_filter_ascii:lower(atom_to_binary(Name));
key(Name) -> json_filter_ascii:lower(Name).

reason(200) -> <<"OK">>; reason(204) -> <<"No Content">>; reason(400) -> <<"Bad Request">>;
reason(405) -> <<"Method Not Allowed">>; reason(411) -> <<"Length Required">>;
reason(413) -> <<"Content Too Large">>; reason(431) -> <<"Request Header Fields Too Large">>;
reason(505) -> <<"HTTP Version Not Supported">>; reason(503) -> <<"Service Unavailable">>;
reason(502) -> <<"Bad Gateway">>; reason(504) -> <<"Gateway Timeout">>; reason(_) -> <<"Status">>.

now_ms() -> erlang:monotonic_time(millisecond).

%% The client is gone: its backend connection goes back to the pool for the next one.
close(Sock) ->
    gen_tcp:close(Sock),
    json_filter_pool:release().
