%% The filter's decision, the same rule as the Node filter's lib/filter-rule.js:
%% relay a document whose top-level field "relay" is exactly true; filter out everything else.
-module(json_filter_rule).
-export([should_relay/1]).

should_relay(#{<<"relay">> := true}) -> true;
should_relay(_) -> false.
