%% Keep-alive connections to the backend. A client connection's process keeps the backend
%% socket it used for its next relay (no pool process on the hot path: going through one for
%% every request capped the filter), and gives it back to the pool when its client leaves; the
%% pool process only holds those idle sockets for the next client connection.
%% A connection that fails -> {error, Why} (502); no answer within backend_timeout_ms -> {error, timeout} (504).
-module(json_filter_pool).
-behaviour(gen_server).
-export([start_link/0, request/2, release/0]).

-define(HELD, json_filter_backend_socket).

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
    {ok, Timeout} = application:get_env(json_filter, backend_timeout_ms),
    Deadline = erlang:monotonic_time(millisecond) + Timeout,
    Held = case erase(?HELD) of
               undefined -> gen_server:call(?MODULE, checkout);
               S -> {ok, S}
           end,
    case Held of
        {ok, Sock} ->
            case exchange(Sock, Path, Body, Deadline) of
                {error, closed} -> fresh(Path, Body, Deadline); % an idle socket the backend had closed
                Other -> Other
            end;
        none -> fresh(Path, Body, Deadline)
    end.

fresh(Path, Body, Deadline) ->
    {ok, Host} = application:get_env(json_filter, backend_host),
    {ok, Port} = application:get_env(json_filter, backend_port),
    case gen_tcp:connect(Host, Port, [binary, {active, false}, {packet, http_bin}, {nodelay, true}], left(Deadline)) of
        {ok, Sock} -> exchange(Sock, Path, Body, Deadline);
        {error, Why} -> {error, Why}
    end.

exchange(Sock, Path, Body, Deadline) ->
    Head = [<<"POST ">>, Path, <<" HTTP/1.1\r\nhost: backend\r\ncontent-type: application/json\r\ncontent-length: ">>,
            integer_to_binary(byte_size(Body)), <<"\r\n\r\n">>],
    case gen_tcp:send(Sock, [Head, Body]) of
        ok -> response(Sock, Deadline);
        {error, Why} -> gen_tcp:close(Sock), {error, Why}
    end.

response(Sock, Deadline) ->
    case gen_tcp:recv(Sock, 0, left(Deadline)) of
        {ok, {http_response, _, Status, _}} -> response_headers(Sock, Deadline, Status, 0, true);
        {ok, _} -> gen_tcp:close(Sock), {error, bad_response};
        {error, Why} -> gen_tcp:close(Sock), {error, Why}
    end.

response_headers(Sock, Deadline, Status, Len, Keep) ->
    case gen_tcp:recv(Sock, 0, left(Deadline)) of
        {ok, {http_header, _, 'Content-Length', _, V}} -> response_headers(Sock, Deadline, Status, binary_to_integer(V), Keep);
        {ok, {http_header, _, 'Connection', _, V}} -> response_headers(Sock, Deadline, Status, Len, string:lowercase(V) =/= <<"close">>);
        {ok, {http_header, _, _, _, _}} -> response_headers(Sock, Deadline, Status, Len, Keep);
        {ok, http_eoh} when Status =:= 204; Status =:= 304; Len =:= 0 -> done(Sock, Keep, Status, <<>>);
        {ok, http_eoh} ->
            ok = inet:setopts(Sock, [{packet, raw}]),
            Got = gen_tcp:recv(Sock, Len, left(Deadline)),
            ok = inet:setopts(Sock, [{packet, http_bin}]),
            case Got of
                {ok, Body} -> done(Sock, Keep, Status, Body);
                {error, Why} -> gen_tcp:close(Sock), {error, Why}
            end;
        {ok, _} -> gen_tcp:close(Sock), {error, bad_response};
        {error, Why} -> gen_tcp:close(Sock), {error, Why}
    end.

done(Sock, true, Status, Body) ->
    put(?HELD, Sock),
    {ok, Status, Body};
done(Sock, false, Status, Body) ->
    gen_tcp:close(Sock),
    {ok, Status, Body}.

checkin(Sock) ->
    case gen_tcp:controlling_process(Sock, whereis(?MODULE)) of
        ok -> gen_server:cast(?MODULE, {checkin, Sock});
        _ -> gen_tcp:close(Sock)
    end.

left(Deadline) -> max(0, Deadline - erlang:monotonic_time(millisecond)).

%% --- the pool process: a list of idle sockets ---
init([]) -> {ok, []}.

handle_call(checkout, {Caller, _}, [Sock | Idle]) ->
    case gen_tcp:controlling_process(Sock, Caller) of
        ok -> {reply, {ok, Sock}, Idle};
        _ -> gen_tcp:close(Sock), handle_call(checkout, {Caller, x}, Idle)
    end;
handle_call(checkout, _, []) -> {reply, none, []}.

handle_cast({checkin, Sock}, Idle) ->
    {ok, Max} = application:get_env(json_filter, pool_max_idle),
    case length(Idle) >= Max of
        true -> gen_tcp:close(Sock), {noreply, Idle};
        false -> {noreply, [Sock | Idle]}
    end.

handle_info(_, Idle) -> {noreply, Idle}.
