-- The lab's counters in nginx: every request by location (URI), lab case (x-lab-case), what
-- limit_req decided ($limit_req_status: PASSED, DELAYED, REJECTED, or empty where no limit
-- applies), what a proxy cache did ($upstream_cache_status: HIT, MISS, EXPIRED, ..., or empty)
-- and status, kept in a shared dict and served in Prometheus text format. This is
-- the proxy's own count that the runner sets beside k6's and the metrics stores'.
local M = {}
local SEP = "\31"

local function dict() return ngx.shared.lab_metrics end

-- Bounded label values: the lab's cases and locations are short names.
local function short(s) return #s <= 64 and s or s:sub(1, 61) .. "..." end

function M.log()
  local key = table.concat({ short(ngx.var.uri or ""), short(ngx.var.http_x_lab_case or ""),
                             ngx.var.limit_req_status or "", ngx.var.upstream_cache_status or "",
                             ngx.var.status }, SEP)
  dict():incr(key, 1, 0)
end

local function esc(s)
  return (s:gsub('[\\"\n%c]', function(c)
    if c == "\\" or c == '"' then return "\\" .. c end
    return string.format("\\x%02x", c:byte())
  end))
end

function M.serve()
  local d = dict()
  local out = {
    "# HELP lab_nginx_requests_total Requests by location, lab case, limit_req decision, cache status and status.",
    "# TYPE lab_nginx_requests_total counter",
  }
  for _, key in ipairs(d:get_keys(0)) do
    local uri, case, decision, cache, status = key:match("^(.-)\31(.-)\31(.-)\31(.-)\31(.-)$")
    if uri then
      out[#out + 1] = string.format('lab_nginx_requests_total{location="%s",case="%s",limit_req="%s",cache="%s",status="%s"} %d',
        esc(uri), esc(case), esc(decision), esc(cache), esc(status), d:get(key) or 0)
    end
  end
  ngx.header.content_type = "text/plain; version=0.0.4"
  ngx.print(table.concat(out, "\n"), "\n")
end

return M
