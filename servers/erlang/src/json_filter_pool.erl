%% Keep-alive connections to the backend. A client connection's process keeps the backend
%% socket it used for its next relay (no pool process on the hot path: going through one for
%% every request capped the filter), and gives it back to the pool when its client leaves; the
%% pool process only holds those idle sockets for the next client connection.
%%
%% A backend socket stays in the VM's poll set ({active, N}: its answers arrive as messages),
%% not a passive recv per relay: each recv first read nothing (the answer comes 30 ms later) and
%% armed and disarmed the poll (what it saved: servers/README.md). The backend only ever sends answers
%% to what it was asked, so its messages are bounded. An idle socket the pool holds that sends
%% anything (its close, or bytes out of step) is closed and dropped from the pool.
%%
%% backend_timeout_ms bounds two waits, each started when the filter asks: the connection to the
%% backend (measured by the VM's socket driver), and the backend's answer after the request was
%% sent (a receive's timeout, and an answer already in the mailbox is taken first). It never
%% counts the filter's own queueing. Under 2500 connections the VM's run queue
%% is ~2000 processes deep and a process can wait a second or more for its turn (measured at a
%% connection surge); a deadline started before the checkout, with a recv per header line, made
%% the filter answer 504 to requests the backend had answered in 30 ms.
%% A connection that fails -> {error, Why} (502); no connection or no answer in time -> {error, timeout} (504).
-module(json_filter_pool).
-behaviour(gen_server).
-export([start_link/0, request/2, release/0]).
-export([parse_response/1]).

-define(HELD, json_filter_backend_socket).
%% Answers delivered as messages before the socket must be re-armed (tcp_passive).
-define(ACTIVE, 100).

-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

%% Gives the calling process's backend socket, if it holds one, back to the pool.
release() ->
    case erase(?HELD) of
        undefined -> ok;
        Sock -> checkin(Sock)
    end.

start_link() ->
    gen_server:start_link({local, ?MODULE}, ?MODULE, [], []).

request(Path, Body) ->
    Held = case erase(?HELD) of
               undefined -> gen_server:call(?MODULE, checkout);
               S -> {ok, S}
           end,
    case Held of
        {ok, Sock} ->
            case exchange(Sock, Path, Body) of
                {error, closed} -> fresh(Path, Body); % an idle socket the backend had closed
                Other -> Other
            end;
        none -> fresh(Path, Body)
    end.

fresh(Path, Body) ->
    Host = json_filter_config:get(backend_host),
    Port = json_filter_config:get(backend_port),
    Addr = case inet:parse_address(Host) of {ok, IP} -> IP; _ -> Host end,
    case gen_tcp:connect(Addr, Port, [binary, {active, ?ACTIVE}, {packet, raw}, {nodelay, true}], timeout()) of
        {ok, Sock} -> exchange(Sock, Path, Body);
        {error, Why} -> {error, Why}
    end.

exchange(Sock, Path, Body) ->
    Head = [<<"POST ">>, Path, <<" HTTP/1.1\r\nhost: backend\r\ncontent-type: application/json\r\ncontent-length: ">>,
            integer_to_binary(byte_size(Body)), <<"\r\n\r\n">>],
    case gen_tcp:send(Sock, [Head, Body]) of
        ok -> response(Sock, <<>>, erlang:monotonic_time(millisecond) + timeout());
        {error, Why} -> close(Sock), {error, Why}
    end.

%% The answer is read raw and parsed in-process: one recv for a whole answer in the usual case.
%% When this process waited for its turn past the deadline, what has arrived is still taken
%% (the mailbox is read before the timeout counts), so only a silent backend times out.
response(Sock, Buf, Deadline) ->
    case json_filter_sock:recv(Sock, ?ACTIVE, max(0, Deadline - erlang:monotonic_time(millisecond))) of
        {ok, Data} ->
            All = <<Buf/binary, Data/binary>>,
            case parse_response(All) of
                {ok, Status, RBody, Keep} -> done(Sock, Keep, Status, RBody);
                more -> response(Sock, All, Deadline);
                error -> close(Sock), {error, bad_response}
            end;
        {error, Why} -> close(Sock), {error, Why}
    end.


%% Closes a backend socket and drops what it had delivered and was not read (a late answer).
close(Sock) ->
    gen_tcp:close(Sock),
    flush(Sock).

flush(Sock) ->
    receive
        {tcp, Sock, _} -> flush(Sock);
        {tcp_passive, Sock} -> flush(Sock);
        {tcp_closed, Sock} -> flush(Sock);
        {tcp_error, Sock, _} -> flush(Sock)
    after 0 -> ok
    end.

%% One HTTP/1.1 answer from its bytes: {ok, Status, Body, KeepAlive} | more | error.
%% Bytes beyond the answer mean the connection is out of step: it is not reused.
parse_response(Buf) ->
    case erlang:decode_packet(http_bin, Buf, []) of
        {ok, {http_response, _, Status, _}, Rest} -> fields(Rest, Status, 0, true);
        {more, _} -> more;
        _ -> error
    end.

fields(Buf, Status, Len, Keep) ->
    case erlang:decode_packet(httph_bin, Buf, []) of
        {ok, {http_header, _, 'Content-Length', _, V}, Rest} ->
            case catch binary_to_integer(V) of
                N when is_integer(N), N >= 0 -> fields(Rest, Status, N, Keep);
                _ -> error
            end;
        {ok, {http_header, _, 'Connection', _, V}, Rest} -> fields(Rest, Status, Len, json_filter_ascii:lower(V) =/= <<"close">>);
        {ok, {http_header, _, _, _, _}, Rest} -> fields(Rest, Status, Len, Keep);
        {ok, http_eoh, Rest} ->
            BodyLen = case Status of 204 -> 0; 304 -> 0; _ -> Len end,
            case Rest of
                <<RBody:BodyLen/binary>> -> {ok, Status, RBody, Keep};
                <<RBody:BodyLen/binary, _/binary>> -> {ok, Status, RBody, false};
                _ -> more
            end;
        {more, _} -> more;
        _ -> error
    end.

done(Sock, true, Status, Body) ->
    put(?HELD, Sock),
    {ok, Status, Body};
done(Sock, false, Status, Body) ->
    close(Sock),
    {ok, Status, Body}.

checkin(Sock) ->
    %% A socket that went passive after its ?ACTIVE-th message is re-armed here: its tcp_passive
    %% message stays in this mailbox, and the next owner would wait for an answer for ever.
    receive
        {tcp_passive, Sock} -> inet:setopts(Sock, [{active, ?ACTIVE}])
    after 0 -> ok
    end,
    case gen_tcp:controlling_process(Sock, whereis(?MODULE)) of
        ok -> gen_server:cast(?MODULE, {checkin, Sock});
        _ -> close(Sock)
    end.

timeout() ->
    json_filter_config:get(backend_timeout_ms).

%% --- the pool process: a list of idle sockets ---
init([]) -> {ok, []}.

handle_call(checkout, {Caller, _}, [Sock | Idle]) ->
    case gen_tcp:controlling_process(Sock, Caller) of
        ok -> {reply, {ok, Sock}, Idle};
        _ -> gen_tcp:close(Sock), handle_call(checkout, {Caller, x}, Idle)
    end;
handle_call(checkout, _, []) -> {reply, none, []}.

handle_cast({checkin, Sock}, Idle) ->
    Max = json_filter_config:get(pool_max_idle),
    case length(Idle) >= Max of
        true -> gen_tcp:close(Sock), {noreply, Idle};
        false -> {noreply, [Sock | Idle]}
    end.

%% An idle socket that delivers anything is closed by the backend or out of step: not reused.
handle_info({tcp, Sock, _}, Idle) -> {noreply, drop(Sock, Idle)};
handle_info({tcp_closed, Sock}, Idle) -> {noreply, drop(Sock, Idle)};
handle_info({tcp_error, Sock, _}, Idle) -> {noreply, drop(Sock, Idle)};
handle_info({tcp_passive, Sock}, Idle) -> {noreply, drop(Sock, Idle)};
handle_info(_, Idle) -> {noreply, Idle}.

drop(Sock, Idle) ->
    gen_tcp:close(Sock),
    lists:delete(Sock, Idle).
