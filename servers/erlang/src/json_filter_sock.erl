%% What the client and backend sockets share: both are in {active, N} mode, their bytes arriving
%% as messages N at a time, and re-armed when the driver says it stopped (tcp_passive).
-module(json_filter_sock).
-export([recv/3]).

%% The next chunk from Sock within Timeout ms, re-arming it for Active more messages when it went
%% passive: {ok, Data} | {error, closed | timeout | Why}.
recv(Sock, Active, Timeout) ->
    receive
        {tcp, Sock, Data} -> {ok, Data};
        {tcp_passive, Sock} ->
            case inet:setopts(Sock, [{active, Active}]) of
                ok -> recv(Sock, Active, Timeout);
                Error -> Error
            end;
        {tcp_closed, Sock} -> {error, closed};
        {tcp_error, Sock, Why} -> {error, Why}
    after Timeout -> {error, timeout}
    end.
