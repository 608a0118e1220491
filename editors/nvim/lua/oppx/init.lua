-- oppx for Neovim: the setup, the one connection to oppxd (found as the CLI finds it, started with
-- `oppx daemon start` when none answers, greeted with `hello`) and the commands' entry points.
-- Connecting is asynchronous: callers pass a function that gets the client or a message.
local rpc = require('oppx.rpc')
local ui = require('oppx.ui')

local M = {}

M.protocol = 1 -- the protocol version this plugin speaks (docs/protocol.md, "Versioning")
local defaults = {
  oppx = 'oppx', -- the oppx program that starts the daemon
  socket = nil, -- the socket path; default as the CLI's: $OPPX_SOCKET, $XDG_RUNTIME_DIR, /tmp
}
M.config = vim.deepcopy(defaults)

local client = nil -- the connection that said hello
local waiting = nil -- callbacks waiting while a connection is being made

function M.setup(opts)
  M.config = vim.tbl_extend('force', defaults, opts or {})
end

-- docs/protocol.md, "Connecting": the first of these that applies.
function M.socket_path()
  local explicit = M.config.socket
  if explicit and explicit ~= '' then
    return vim.fn.fnamemodify(explicit, ':p')
  end
  local env = vim.env.OPPX_SOCKET
  if env and env ~= '' then
    return vim.fn.fnamemodify(env, ':p')
  end
  local runtime = vim.env.XDG_RUNTIME_DIR
  if runtime and runtime:sub(1, 1) == '/' then
    return runtime .. '/oppx/oppxd.sock'
  end
  return string.format('/tmp/oppx-%d/oppxd.sock', vim.loop.getuid())
end

-- Whoever can write the socket's folder could have put their own daemon there: the folder must be
-- a real folder of ours with no group or other permission bits. A missing one is the daemon's to make.
local function unsafe_folder(path)
  local dir = vim.fn.fnamemodify(path, ':h')
  local st = vim.loop.fs_lstat(dir)
  if not st then
    return nil
  end
  local why
  if st.type ~= 'directory' then
    why = 'is not a folder (a symlink?)'
  elseif st.uid ~= vim.loop.getuid() then
    why = 'belongs to another user'
  elseif bit.band(st.mode, tonumber('077', 8)) ~= 0 then
    why = string.format('can be used by others (mode %o)', bit.band(st.mode, tonumber('777', 8)))
  end
  return why
    and string.format(
      'the socket folder %s %s; not connecting. Run `chmod 700 %s` if it is yours, or set OPPX_SOCKET to a path in a folder of your own.',
      dir,
      why,
      dir
    )
end

local function oppx_command(args)
  local cmd = { M.config.oppx }
  if M.config.socket and M.config.socket ~= '' then
    vim.list_extend(cmd, { '--socket', M.socket_path() })
  end
  return vim.list_extend(cmd, args)
end

-- Runs `oppx daemon start`; done(nil) once it exited 0, else done(message).
local function start_daemon(done)
  local program = M.config.oppx
  if vim.fn.executable(program) ~= 1 then
    return done(
      string.format(
        'no daemon answers and `%s` is not a program on PATH: install oppx or give its path with require("oppx").setup{oppx = "/path/to/oppx"}.',
        program
      )
    )
  end
  local stderr = {}
  local ok, job = pcall(vim.fn.jobstart, oppx_command({ 'daemon', 'start' }), {
    stderr_buffered = true,
    on_stderr = function(_, data)
      stderr = data
    end,
    on_exit = function(_, code)
      if code == 0 then
        return done(nil)
      end
      local said = vim.trim(table.concat(stderr, '\n'))
      done(string.format('`oppx daemon start` failed (exit %d)%s', code, said ~= '' and (': ' .. said) or ''))
    end,
  })
  if not ok or job <= 0 then
    done('could not run ' .. program)
  end
end

local function hello(c, done)
  local env = vim.fn.environ()
  c:request('hello', {
    protocol = M.protocol,
    client = 'nvim',
    cwd = vim.fn.getcwd(),
    env = vim.tbl_isempty(env) and vim.empty_dict() or env,
  }, function(result, err)
    if err then
      if type(err.data) == 'table' and err.data.kind == 'version_mismatch' then
        return done(ui.clean(err.message))
      end
      return done('hello failed: ' .. ui.clean(err.message))
    end
    if result.protocol ~= M.protocol then
      return done(
        string.format(
          'the daemon speaks protocol %s and this plugin %d; restart the daemon with `oppx daemon restart`',
          tostring(result.protocol),
          M.protocol
        )
      )
    end
    done(nil)
  end)
end

-- Connects (starting the daemon once when none answers) and says hello; done(client) or
-- done(nil, message).
local function connect(done)
  local path = M.socket_path()
  local started = false
  local function attempt()
    local unsafe = unsafe_folder(path)
    if unsafe then
      return done(nil, unsafe)
    end
    local c = rpc.new()
    c:connect(path, function(code, message)
      if code == 'ENOENT' or code == 'ECONNREFUSED' or code == 'ENOTDIR' then
        if started then
          return done(nil, string.format('the daemon was started but does not answer on %s (%s)', path, message))
        end
        started = true
        return start_daemon(function(failure)
          if failure then
            return done(nil, failure)
          end
          attempt()
        end)
      elseif code == 'EACCES' or code == 'EPERM' then
        return done(
          nil,
          string.format('%s is not yours (%s): set OPPX_SOCKET to a path in a folder of your own.', path, message)
        )
      elseif code then
        return done(nil, string.format('cannot connect to %s: %s', path, message))
      end
      hello(c, function(failure)
        if failure then
          c:close()
          return done(nil, failure)
        end
        done(c)
      end)
    end)
  end
  attempt()
end

-- cb(client) with the connection, made when there is none; on failure the message is shown and
-- cb(nil, message) is called.
function M.with_client(cb)
  if client and not client.closed then
    return cb(client)
  end
  if waiting then
    return table.insert(waiting, cb)
  end
  waiting = { cb }
  connect(function(c, message)
    local callbacks = waiting
    waiting = nil
    if c then
      client = c
      require('oppx.chat').attach(c)
      c.on_request['mcp/elicit'] = function(_, reply)
        reply({ action = 'decline' }) -- forms are not asked in nvim: agent/open says elicit = decline
      end
      c.on_close = function(reason)
        if client == c then
          client = nil
        end
        require('oppx.chat').detached(reason)
      end
    else
      ui.error(message)
    end
    for _, f in ipairs(callbacks) do
      f(c, message)
    end
  end)
end

-- Closes the connection (the agent with it); the next command connects again.
function M.disconnect()
  if client then
    client:close()
  end
end

function M.connectors()
  M.with_client(function(c)
    if c then
      require('oppx.connectors').show(c)
    end
  end)
end

function M.ask(message)
  if message and vim.trim(message) ~= '' then
    return require('oppx.chat').ask(message)
  end
  vim.ui.input({ prompt = 'Ask oppx: ' }, function(input)
    if input and vim.trim(input) ~= '' then
      require('oppx.chat').ask(input)
    end
  end)
end

return M
