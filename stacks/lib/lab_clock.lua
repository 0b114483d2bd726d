-- The limiter's clock as nginx reads it for a request: ngx_current_msec, the cached millisecond
-- of its monotonic clock that limit_req charges and drains by (nginx's binary exports it for its
-- dynamic modules). Read in the rewrite phase, which runs in the same pass as limit_req's
-- preaccess phase with no clock update between, and kept in $lab_clock for the access log
-- (the lab's replay of k6's sends reads it: docs/model.md#seen-lag). A binary that does not
-- export it leaves "-", and the log's $msec stands in.
local ffi = require "ffi"
local ok = pcall(ffi.cdef, "extern uintptr_t ngx_current_msec;")
local M = {}

function M.stamp()
  if not ok then return end
  local read, msec = pcall(function() return ffi.C.ngx_current_msec end)
  if read then ngx.var.lab_clock = tostring(tonumber(msec)) end
end

return M
