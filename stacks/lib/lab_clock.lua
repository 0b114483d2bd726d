-- The limiter's clock as nginx reads it for a request: ngx_current_msec, the cached millisecond
-- of its monotonic clock that limit_req charges and drains by (nginx's binary exports it for its
-- dynamic modules). Read in the rewrite phase of a limited location, which runs in the same pass
-- as limit_req's preaccess phase with no clock update between, and kept in the request's
-- X-Lab-Clock header for the access log ($http_x_lab_clock): a header, unlike a variable set in a
-- server, outlives the internal redirects of try_files and error_page, and the first limited
-- location a request meets stamps it, as limit_req counts a request once. The lab's replay of
-- k6's sends reads it (docs/model.md#seen-lag). A binary that does not export it leaves "-", and
-- the log's $msec stands in.
local ffi = require "ffi"
local ok = pcall(ffi.cdef, "extern uintptr_t ngx_current_msec;")
local M = {}

function M.stamp()
  if not ok then return end
  -- Read from the headers themselves: evaluating $http_x_lab_clock here would cache its absence.
  if ngx.req.get_headers()["x-lab-clock"] then return end
  local read, msec = pcall(function() return ffi.C.ngx_current_msec end)
  if read then ngx.req.set_header("X-Lab-Clock", tostring(tonumber(msec))) end
end

return M
