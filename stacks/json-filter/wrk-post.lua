-- wrk script for the json-filter benchmark: POST the document in $LAB_BODY on every request,
-- as the seed's sample/caller.lua did with its sample JSON.
local f = assert(io.open(os.getenv("LAB_BODY"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
wrk.headers["Content-Type"] = "application/json"
f:close()
