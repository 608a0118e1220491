-- The Neovim plugin against the real daemon, run by nvim_test.sh (which makes the temp HOME and
-- XDG folders, and the repository that is the current folder): the plugin starts oppxd with
-- `oppx daemon start`, :OppxConnectors lists a running and a failed connector and <CR> shows
-- tools, :OppxAsk runs a turn whose tool call the daemon asks about (answered yes through
-- vim.ui.select), <C-c> cancels a turn the model never finishes, and a protocol mismatch is said.
-- Every wait is vim.wait on an event with a deadline. Exits 0 when all checks pass.
local OPPX = vim.env.OPPX_TEST_OPPX
local SUPPORT = vim.env.OPPX_TEST_SUPPORT
local ROOT = vim.env.OPPX_TEST_ROOT
local EVERYTHING = vim.env.OPPX_TEST_EVERYTHING or ''

local failures = 0
local function say(text)
  io.stdout:write(text .. '\n')
end
local function check(ok, what)
  say((ok and 'ok   ' or 'FAIL ') .. what)
  if not ok then
    failures = failures + 1
  end
  return ok
end
local function wait(ms, condition, what)
  return check(vim.wait(ms, condition, 20), what)
end
local function read(path)
  local f = io.open(path)
  if not f then
    return ''
  end
  local s = f:read('*a')
  f:close()
  return s
end
local function write(path, text)
  local f = assert(io.open(path, 'w'))
  f:write(text)
  f:close()
end
local function text_of(name)
  local buf = vim.fn.bufnr(name)
  if buf == -1 then
    return ''
  end
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end
local function count(text, plain)
  local n, at = 0, 1
  while true do
    local found = text:find(plain, at, true)
    if not found then
      return n
    end
    n, at = n + 1, found + 1
  end
end

-- A completion step of scripted_model_server.js whose content is `object`, in two pieces.
local function says(object)
  local half = math.floor(#object / 2)
  return { deltas = { object:sub(1, half), object:sub(half + 1) } }
end

local function run()
  vim.cmd('runtime! plugin/oppx.lua') -- -u NONE loads no plugins
  check(vim.fn.exists(':OppxAsk') == 2 and vim.fn.exists(':OppxConnectors') == 2, 'the commands are defined')
  check(require('oppx.ui').clean('a\27[31mb\7c\194\155d\r\ne') == 'a[31mbcd e', 'control characters are removed')

  -- The model server: a tool call, its reply, a turn that never ends, and a reply after it.
  local requests = ROOT .. '/requests.jsonl'
  write(
    ROOT .. '/script.json',
    vim.json.encode({
      models = { { id = 'm1', max_model_len = 32768 } },
      completions = {
        says('{"action":"agentc.ping"}'),
        says('{"action":"reply","text":"Pong, it answered."}'),
        { hang = true },
        says('{"action":"reply","text":"Still here."}'),
      },
    })
  )
  local port
  local model = vim.fn.jobstart({ 'node', SUPPORT .. '/scripted_model_server.js', ROOT .. '/script.json', requests }, {
    on_stdout = function(_, data)
      for _, line in ipairs(data) do
        port = port or line:match('^port (%d+)')
      end
    end,
  })
  if not wait(10000, function()
    return port ~= nil
  end, 'the scripted model server listens') then
    return
  end
  vim.env.OPPX_SERVER = 'http://127.0.0.1:' .. port .. '/v1'

  -- The connectors: the agent tests' connector, and one whose program is missing.
  local calls = ROOT .. '/calls.jsonl'
  vim.fn.mkdir(ROOT .. '/config/oppx', 'p')
  write(
    ROOT .. '/config/oppx/mcp.json',
    vim.json.encode({
      mcpServers = {
        agentc = { command = 'node', args = { SUPPORT .. '/agent_connector.js', calls } },
        broken = { command = ROOT .. '/no-such-program' },
      },
    })
  )
  vim.loop.fs_chmod(ROOT .. '/config/oppx/mcp.json', tonumber('600', 8))

  local oppx = require('oppx')
  -- A socket folder others may use is refused before anything connects or starts.
  local said = {}
  local notify = vim.notify
  vim.notify = function(message)
    table.insert(said, message)
  end
  vim.fn.mkdir(ROOT .. '/open', 'p', tonumber('755', 8))
  oppx.setup({ oppx = OPPX, socket = ROOT .. '/open/oppxd.sock' })
  local refused
  oppx.with_client(function(c, message)
    refused = c == nil and message or 'connected'
  end)
  check(refused ~= nil and refused:find('chmod 700', 1, true) ~= nil, 'an open socket folder is refused: ' .. tostring(refused))
  check(#said == 1 and vim.loop.fs_stat(ROOT .. '/open/oppxd.sock') == nil, 'the user is told, and no daemon was started')
  vim.notify = notify
  oppx.setup({ oppx = OPPX })
  local socket = oppx.socket_path()
  check(socket == ROOT .. '/run/oppx/oppxd.sock', 'the socket is the one under XDG_RUNTIME_DIR: ' .. socket)
  check(vim.loop.fs_stat(socket) == nil, 'no daemon runs before the plugin starts one')

  -- Connecting starts the daemon; the connectors settle before they are listed.
  local settled = false
  oppx.with_client(function(c)
    if c then
      c:request('mcp/list', { wait = true, cwd = vim.fn.getcwd() }, function()
        settled = true
      end)
    end
  end)
  wait(60000, function()
    return settled
  end, 'the plugin started the daemon and its connectors settled')
  check(vim.loop.fs_stat(socket) ~= nil, 'the daemon listens on the socket')
  local has_everything = EVERYTHING ~= '' and vim.loop.fs_stat(EVERYTHING) ~= nil
  if has_everything then
    vim.fn.system({ OPPX, 'mcp', 'add', 'everything', '--', 'node', EVERYTHING, 'stdio' })
    check(vim.v.shell_error == 0, 'oppx mcp add everything')
  else
    say('skip server-everything: not installed (packaging/bootstrap.sh installs it)')
  end

  vim.cmd('OppxConnectors')
  wait(10000, function()
    return text_of('oppx://connectors'):find('broken', 1, true) ~= nil
  end, ':OppxConnectors fills oppx://connectors')
  local listed = text_of('oppx://connectors')
  check(listed:find('\nagentc%s+running%s+%d+ tools') ~= nil, 'agentc is running with its tools')
  check(listed:find('\nbroken%s+failed%s+0 tools\n    [^\n]+\n    1%. ') ~= nil, 'broken is failed, with why and numbered steps')
  if has_everything then
    check(listed:find('\neverything%s+running%s+%d+ tools') ~= nil, 'server-everything is running')
  end

  -- <CR> on agentc's line shows its tools.
  local line = 0
  for i, l in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
    if l:match('^agentc ') then
      line = i
    end
  end
  vim.api.nvim_win_set_cursor(0, { line, 0 })
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<CR>', true, false, true), 'x', false)
  wait(10000, function()
    return text_of('oppx://tools/agentc'):find('\n  ping: Pings the service.', 1, true) ~= nil
  end, '<CR> shows the connector\'s tools in oppx://tools/agentc')

  -- A turn whose tool call needs permission: the daemon asks, the test answers yes.
  local asked = {}
  vim.ui.select = function(items, opts, on_choice)
    local labels = vim.tbl_map(opts.format_item, items)
    table.insert(asked, { prompt = opts.prompt, labels = labels })
    for i, label in ipairs(labels) do
      if label == 'Yes' then
        return on_choice(items[i], i)
      end
    end
    on_choice(nil, nil)
  end
  vim.cmd('OppxAsk ping the service')
  wait(60000, function()
    return text_of('oppx://chat'):find('\n%-%- done') ~= nil
  end, 'the turn finished')
  local chat = text_of('oppx://chat')
  check(#asked == 1 and asked[1].prompt:find('agentc.ping', 1, true) ~= nil, 'the daemon asked about agentc.ping once')
  check(#asked == 1 and vim.tbl_contains(asked[1].labels, 'Always every tool of agentc'), 'the choices include always')
  check(chat:find('Pong, it answered.', 1, true) ~= nil, 'the chat shows the reply')
  check(chat:find('• agentc.ping: ran: pong', 1, true) ~= nil, 'the chat shows the action and its status')
  check(read(calls):find('"ping"', 1, true) ~= nil, 'the connector got the call after the yes')

  -- A turn the model never finishes: <C-c> in the chat sends agent/cancel.
  vim.cmd('OppxAsk take your time')
  wait(30000, function()
    return count(read(requests), '/v1/chat/completions') >= 3
  end, 'the second turn reached the model server')
  vim.api.nvim_set_current_buf(vim.fn.bufnr('oppx://chat'))
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<C-c>', true, false, true), 'x', false)
  wait(30000, function()
    return text_of('oppx://chat'):find('\n%-%- cancelled') ~= nil
  end, '<C-c> cancelled the turn')

  -- A daemon of another protocol version: the message says what to do.
  said = {}
  vim.notify = function(message)
    table.insert(said, message)
  end
  oppx.disconnect()
  oppx.protocol = 2
  vim.cmd('OppxConnectors')
  wait(10000, function()
    return #said > 0
  end, 'a protocol mismatch is reported')
  check((said[1] or ''):find('oppx daemon restart', 1, true) ~= nil, 'it names `oppx daemon restart`: ' .. (said[1] or ''))
  vim.notify = notify
  oppx.protocol = 1

  -- A new connection continues the saved conversation.
  vim.cmd('OppxAsk still there?')
  wait(60000, function()
    return count(text_of('oppx://chat'), '\n-- done') >= 2
  end, 'a turn on a new connection finished')
  check(text_of('oppx://chat'):find('Still here.', 1, true) ~= nil, 'it shows its reply')
  local last = ''
  for l in read(requests):gmatch('[^\n]+') do
    if l:find('/v1/chat/completions', 1, true) then
      last = l
    end
  end
  check(last:find('ping the service', 1, true) ~= nil, 'the agent was opened on the saved conversation')
  vim.fn.jobstop(model)
end

local ok, err = xpcall(run, debug.traceback)
if not ok then
  say('FAIL the test stopped: ' .. tostring(err))
  failures = failures + 1
end
if failures > 0 or vim.env.OPPX_TEST_SHOW then
  say('oppx://connectors:\n' .. text_of('oppx://connectors'))
  say('oppx://chat:\n' .. text_of('oppx://chat'))
end
say(string.format('%d failed', failures))
vim.cmd(failures == 0 and 'qall!' or 'cquit 1')
