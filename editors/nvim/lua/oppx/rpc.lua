-- The JSON-RPC 2.0 client of oppxd's socket (docs/protocol.md, "Framing" and "Envelope"): one JSON
-- object per line over a vim.loop pipe, calls matched by id, the daemon's notifications and
-- requests handed to handlers by method. luv calls back in a fast context, so every message is
-- handled through vim.schedule, in the order it came; nothing here blocks.
local M = {}

local Client = {}
Client.__index = Client

-- A client not yet connected. on_notification[method](params) and
-- on_request[method](params, reply) are set by its owner; reply(result) or reply(nil, error).
function M.new()
  return setmetatable({
    next_id = 0,
    pending = {}, -- id -> callback(result, error)
    partial = {}, -- the chunks of a line not yet complete
    on_notification = {},
    on_request = {},
    on_close = nil, -- function(reason), once, when the connection ends
    closed = false,
  }, Client)
end

-- The error a call gets when the connection ends before its reply (never on the wire).
local function disconnected(reason)
  return { code = -32603, message = reason, data = { kind = 'disconnected' } }
end

-- Connects to the socket `path`; cb(nil) once connected, or cb(code, message) with libuv's
-- error name ('ENOENT', 'ECONNREFUSED', 'EACCES', ...).
function Client:connect(path, cb)
  local pipe = vim.loop.new_pipe(false)
  pipe:connect(path, function(err)
    vim.schedule(function()
      if err then
        pipe:close()
        return cb(err:match('^(%u+)') or err, err)
      end
      self.pipe = pipe
      pipe:read_start(function(read_err, chunk)
        self:_read(read_err, chunk)
      end)
      cb(nil)
    end)
  end)
end

-- Fast context: split what came into lines (a '\r' before '\n' dropped, empty lines ignored) and
-- hand the complete ones to the main loop. At end of stream a final partial line is dropped.
function Client:_read(err, chunk)
  if err or not chunk then
    vim.schedule(function()
      self:_closed(err and ('the connection to oppxd failed: ' .. err) or 'oppxd closed the connection')
    end)
    return
  end
  table.insert(self.partial, chunk)
  if not chunk:find('\n', 1, true) then
    return
  end
  local data = table.concat(self.partial)
  local lines, start = {}, 1
  while true do
    local nl = data:find('\n', start, true)
    if not nl then
      break
    end
    local line = data:sub(start, nl - 1):gsub('\r$', '')
    if line ~= '' then
      table.insert(lines, line)
    end
    start = nl + 1
  end
  self.partial = { data:sub(start) }
  vim.schedule(function()
    for _, line in ipairs(lines) do
      self:_dispatch(line)
    end
  end)
end

local function present(v)
  return v ~= nil and v ~= vim.NIL
end

function Client:_dispatch(line)
  local ok, msg = pcall(vim.json.decode, line)
  if not ok or type(msg) ~= 'table' then
    return -- not ours to fix: the daemon only writes JSON objects
  end
  local params = present(msg.params) and msg.params or {}
  if type(msg.method) == 'string' and present(msg.id) then
    local handler = self.on_request[msg.method]
    if not handler then
      return self:_send({
        jsonrpc = '2.0',
        id = msg.id,
        error = { code = -32601, message = 'nvim does not answer ' .. msg.method, data = { kind = 'method_not_found' } },
      })
    end
    local answered = false
    handler(params, function(result, err)
      if answered then
        return -- one reply per request
      end
      answered = true
      if err then
        self:_send({ jsonrpc = '2.0', id = msg.id, error = err })
      else
        self:_send({ jsonrpc = '2.0', id = msg.id, result = result or vim.empty_dict() })
      end
    end)
  elseif type(msg.method) == 'string' then
    local handler = self.on_notification[msg.method]
    if handler then
      handler(params) -- notifications nobody handles are ignored, as the protocol asks
    end
  elseif present(msg.id) then
    local cb = self.pending[msg.id]
    self.pending[msg.id] = nil
    if cb then
      cb(present(msg.result) and msg.result or nil, present(msg.error) and msg.error or nil)
    end
  end
end

function Client:_send(msg)
  if self.closed or not self.pipe then
    return false
  end
  self.pipe:write(vim.json.encode(msg) .. '\n')
  return true
end

-- An empty Lua table would be written as [], and every method takes an object.
local function object(params)
  if params == nil or vim.tbl_isempty(params) then
    return vim.empty_dict()
  end
  return params
end

-- Calls `method`; cb(result, error) once, with error {code, message, data = {kind}}.
-- Returns the request's id.
function Client:request(method, params, cb)
  self.next_id = self.next_id + 1
  local id = self.next_id
  self.pending[id] = cb
  if not self:_send({ jsonrpc = '2.0', id = id, method = method, params = object(params) }) then
    self.pending[id] = nil
    cb(nil, disconnected('not connected to oppxd'))
  end
  return id
end

function Client:notify(method, params)
  self:_send({ jsonrpc = '2.0', method = method, params = object(params) })
end

-- Ends the connection: calls still waiting get a `disconnected` error, then on_close runs.
function Client:_closed(reason)
  if self.closed then
    return
  end
  self.closed = true
  if self.pipe and not self.pipe:is_closing() then
    self.pipe:close()
  end
  local pending = self.pending
  self.pending = {}
  for _, cb in pairs(pending) do
    cb(nil, disconnected(reason))
  end
  if self.on_close then
    self.on_close(reason)
  end
end

function Client:close()
  self:_closed('the connection to oppxd was closed by nvim')
end

return M
