-- The lab's server cache in lua, OpenResty style: a lua_shared_dict keyed by the lab case and
-- the URI, with the semantics the front's proxy_cache has here:
-- - it stores a 200 for its Cache-Control lifetime (s-maxage, else max-age), and nothing with
--   no-store, no-cache or private, nor without a lifetime (no heuristic freshness);
-- - the lifetime counts from when the response was received (the dict's expiry, in ms);
-- - a hit is answered in the access phase, after limit_req, and says X-Lab-Cache: HIT;
-- - with $lab_cache_lock "on", a miss that finds a fill in flight waits for it (up to 5 s,
--   proxy_cache_lock_timeout's default), else every miss goes to the back end.
-- Stored as "content-type \n cache-control \n body".
local M = {}
local LOCK_S = 5

local function dict() return ngx.shared.lab_cache end
local function key() return (ngx.var.http_x_lab_case or "") .. ngx.var.uri end

-- RFC 9111 5.2.2 for a shared cache; nil where it must not store.
function M.lifetime(cc)
  if type(cc) == "table" then cc = table.concat(cc, ", ") end
  if not cc then return nil end
  cc = cc:lower()
  for _, forbidden in ipairs({ "no%-store", "no%-cache", "private" }) do
    if cc:find("%f[%w-]" .. forbidden .. "%f[^%w-]") then return nil end
  end
  local n = cc:match("%f[%w-]s%-maxage%s*=%s*\"?(%d+)") or cc:match("%f[%w-]max%-age%s*=%s*\"?(%d+)")
  n = tonumber(n)
  if n and n > 0 then return n end
  return nil
end

local function serve(v)
  local ct, cc, body = v:match("^(.-)\n(.-)\n(.*)$")
  ngx.ctx.hit = true
  ngx.status = 200
  if ct ~= "" then ngx.header["Content-Type"] = ct end
  if cc ~= "" then ngx.header["Cache-Control"] = cc end
  ngx.header["X-Lab-Cache"] = "HIT"
  ngx.print(body)
  return ngx.exit(ngx.HTTP_OK)
end

function M.lookup()
  local d, k = dict(), key()
  local v = d:get(k)
  if v then return serve(v) end
  if ngx.var.lab_cache_lock == "on" then
    local lock = k .. "\0lock"
    if d:add(lock, true, LOCK_S) then
      ngx.ctx.lock = lock
    else
      local deadline = ngx.now() + LOCK_S
      while ngx.now() < deadline and d:get(lock) do
        ngx.sleep(0.001)
        v = d:get(k)
        if v then return serve(v) end
      end
    end
  end
  ngx.ctx.key = k
end

local function release()
  if ngx.ctx.lock then dict():delete(ngx.ctx.lock) end
  ngx.ctx.lock = nil
end

function M.header()
  if ngx.ctx.hit then return end
  ngx.header["X-Lab-Cache"] = "MISS"
  local ttl = ngx.status == 200 and M.lifetime(ngx.header["Cache-Control"])
  if ttl and ngx.ctx.key then
    ngx.ctx.ttl = ttl
    ngx.ctx.meta = (ngx.header["Content-Type"] or "") .. "\n" .. (ngx.header["Cache-Control"] or "") .. "\n"
    ngx.ctx.chunks = {}
  else
    release()
  end
end

function M.body()
  local chunks = ngx.ctx.chunks
  if not chunks then return end
  chunks[#chunks + 1] = ngx.arg[1]
  if ngx.arg[2] then
    local ok, err = dict():set(ngx.ctx.key, ngx.ctx.meta .. table.concat(chunks), ngx.ctx.ttl)
    if not ok then ngx.log(ngx.ERR, "lab_cache: not stored: ", err) end
    ngx.ctx.chunks = nil
    release()
  end
end

return M
