%% ASCII case folding, for what HTTP compares without regard to case: header names (tokens) and
%% the values the filter looks into (Connection). string:lowercase walks Unicode grapheme
%% clusters, which the profile showed costly (servers/README.md has its share).
-module(json_filter_ascii).
-export([lower/1]).

lower(B) -> << <<(case C >= $A andalso C =< $Z of true -> C + 32; false -> C end)>> || <<C>> <= B >>.
