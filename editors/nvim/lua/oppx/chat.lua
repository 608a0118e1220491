-- :OppxAsk: the agent of oppxd (docs/protocol.md, "The agent") driven from the buffer oppx://chat.
-- agent/open once per connection, agent/turn per message; agent/event notifications are written as
-- they come (the reply's text, actions and their status, progress, notices), agent/ask requests
-- are answered with vim.ui.select, and <C-c> in the buffer sends agent/cancel.
local ui = require('oppx.ui')

local M = {}

local state = {
  client = nil, -- the connection whose agent is open
  conversation = nil, -- the file of the conversation, to continue it after a reconnection
  turn = nil, -- the running turn: {client, streamed = the reply text written so far}
  open_line = false, -- the last line is a reply still being written
}

local function buffer()
  local buf = ui.scratch('oppx://chat', 'oppxchat')
  vim.keymap.set('n', '<C-c>', M.cancel, { buffer = buf, desc = 'oppx: cancel the running turn' })
  return buf
end

-- Appends whole lines (a new buffer's one empty line is replaced).
local function write(lines)
  local buf = buffer()
  local fresh = vim.api.nvim_buf_line_count(buf) == 1 and vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ''
  ui.set_lines(buf, fresh and 0 or -1, -1, lines)
  state.open_line = false
  ui.follow(buf)
end

-- Appends a piece of the reply: its first line goes on at the end of the last one.
local function stream(text)
  local buf = buffer()
  local pieces = ui.lines(text)
  if state.open_line then
    local last = vim.api.nvim_buf_get_lines(buf, -2, -1, false)[1] or ''
    pieces[1] = last .. pieces[1]
    ui.set_lines(buf, -2, -1, pieces)
  else
    ui.set_lines(buf, -1, -1, pieces)
  end
  state.open_line = true
  ui.follow(buf)
end

-- Arguments as compact JSON after a space, or nothing when there are none.
local function compact(value)
  if type(value) ~= 'table' or vim.tbl_isempty(value) then
    return ''
  end
  local ok, text = pcall(vim.json.encode, value)
  return ok and (' ' .. ui.clean(text)) or ''
end

local function on_event(e)
  if not state.turn then
    return
  end
  if e.kind == 'text' then
    state.turn.streamed = state.turn.streamed .. tostring(e.text or '')
    stream(e.text or '')
  elseif e.kind == 'notice' then
    write(vim.tbl_map(function(l)
      return '! ' .. l
    end, ui.lines(e.text)))
  elseif e.kind == 'action' and type(e.action) == 'table' then
    local a = e.action
    local text = ui.lines(a.text or '')[1] or ''
    if a.status == 'started' then
      write({ '• ' .. ui.clean(a.name) .. compact(a.arguments) })
    else
      write({ string.format('• %s: %s%s', ui.clean(a.name), ui.clean(a.status), text ~= '' and (': ' .. text) or '') })
    end
  elseif e.kind == 'progress' then
    local total = (e.total ~= nil and e.total ~= vim.NIL) and ('/' .. tostring(e.total)) or ''
    local message = (e.message ~= nil and e.message ~= vim.NIL) and (' ' .. ui.clean(e.message)) or ''
    write({ string.format('  … %s%s%s', tostring(e.progress), total, message) })
  end
end

-- The choices of an agent/ask question (docs/protocol.md: yes, always_tool, always_connector, no, text).
local function choices(q)
  local items = { { label = 'Yes', answer = 'yes' } }
  local connector = q.action:match('^([^.]+)%.')
  if not q.once_only and q.action ~= 'login' then
    table.insert(items, { label = q.action == 'run' and 'Always this command' or 'Always this tool', answer = 'always_tool' })
    if connector then
      table.insert(items, { label = 'Always every tool of ' .. ui.clean(connector), answer = 'always_connector' })
    end
  end
  table.insert(items, { label = 'No', answer = 'no' })
  if q.action ~= 'login' then
    table.insert(items, { label = 'No, and say what to do instead', answer = 'text' })
  end
  return items
end

local function on_ask(q, reply)
  q.action = tostring(q.action or '')
  local what = q.action == 'run' and ('run ' .. ui.clean(q.command)) or ui.clean(q.action)
  local lines = { '? ' .. what .. (q.action ~= 'run' and compact(q.arguments) or '') }
  if q.why and q.why ~= vim.NIL and q.why ~= '' then
    table.insert(lines, '  ' .. ui.clean(q.why))
  end
  if q.exposed == true then
    table.insert(lines, '  (the conversation holds something read outside the workspace or secret-looking)')
  end
  if q.action == 'login' then
    -- This plugin runs no logins: the protocol's answer for such a client is no.
    local name = type(q.arguments) == 'table' and ui.clean(q.arguments.connector) or ''
    table.insert(lines, string.format('  Log in again with `oppx mcp login %s` in a terminal, then ask again.', name))
    write(lines)
    return reply({ answer = 'no' })
  end
  write(lines)
  local answered = function(label, answer)
    write({ '  → ' .. label })
    reply(answer)
  end
  vim.ui.select(choices(q), {
    prompt = 'oppx asks: ' .. what,
    kind = 'oppx_ask',
    format_item = function(item)
      return item.label
    end,
  }, function(choice)
    if not choice then
      return answered('No', { answer = 'no' })
    end
    if choice.answer ~= 'text' then
      return answered(choice.label, { answer = choice.answer })
    end
    vim.ui.input({ prompt = 'What should it do instead? ' }, function(text)
      if text and vim.trim(text) ~= '' then
        answered('No: ' .. ui.clean(text), { answer = 'text', text = text })
      else
        answered('No', { answer = 'no' })
      end
    end)
  end)
end

-- A new connection said hello: its agent/event and agent/ask come here.
function M.attach(c)
  c.on_notification['agent/event'] = on_event
  c.on_request['agent/ask'] = on_ask
end

function M.detached(reason)
  state.client = nil
  if state.turn then
    write({ '-- ' .. ui.clean(reason) .. '; the turn ended. :OppxAsk connects again and goes on with the conversation.' })
    state.turn = nil
  end
end

-- The end of a turn: the reply (when no text event brought it) and how the turn ended.
local function finished(result, err)
  local turn = state.turn
  state.turn = nil
  if err then
    return write(vim.list_extend({ '-- the turn failed:' }, ui.error_lines(err)))
  end
  if result.conversation and result.conversation ~= vim.NIL then
    state.conversation = result.conversation
  end
  if turn and turn.streamed == '' and type(result.reply) == 'string' and result.reply ~= '' then
    write(ui.lines(result.reply))
  end
  local status = {}
  if type(result.error) == 'table' then
    write(vim.list_extend({ '-- the model server failed:' }, ui.error_lines(result.error)))
    table.insert(status, 'failed')
  end
  if result.cancelled == true then
    table.insert(status, 'cancelled')
  end
  if result.declined == true then
    table.insert(status, 'an action was declined')
  end
  if result.step_bound == true then
    table.insert(status, 'stopped at its bound of steps')
  end
  if type(result.connectors_down) == 'table' and #result.connectors_down > 0 then
    table.insert(status, 'down: ' .. ui.clean(table.concat(result.connectors_down, ', ')))
  end
  write({ '-- ' .. (#status > 0 and table.concat(status, '; ') or 'done'), '' })
end

local function opened(result)
  local lines = { string.format('-- oppx agent, model %s, %d tools', ui.clean(result.model), #(result.tools or {})) }
  for _, n in ipairs(result.notices or {}) do
    table.insert(lines, '! ' .. ui.clean(n))
  end
  for _, w in ipairs(result.warnings or {}) do
    table.insert(lines, '! ' .. ui.clean(w.message))
  end
  for _, c in ipairs(result.not_offered or {}) do
    table.insert(lines, string.format('! %s is not offered (%s): %s', ui.clean(c.name), ui.clean(c.state), ui.clean(c.reason)))
  end
  write(lines)
end

-- Opens the connection's agent when it has none; then(true) once it is open.
local function open_agent(c, next)
  if state.client == c then
    return next(true)
  end
  local params = { cwd = vim.fn.getcwd(), mode = 'chat', can_ask = true, elicit = 'decline' }
  params.conversation = state.conversation
  c:request('agent/open', params, function(result, err)
    if err then
      write(vim.list_extend({ '-- the agent could not start:' }, ui.error_lines(err)))
      return next(false)
    end
    state.client = c
    opened(result)
    next(true)
  end)
end

function M.ask(message)
  if state.turn then
    return ui.error('a turn is running: wait for it, or press <C-c> in oppx://chat to cancel it')
  end
  require('oppx').with_client(function(c)
    if not c then
      return
    end
    write(vim.tbl_map(function(l)
      return '> ' .. l
    end, ui.lines(message)))
    state.turn = { client = c, streamed = '' }
    open_agent(c, function(ok)
      if not ok then
        state.turn = nil
        return
      end
      c:request('agent/turn', { message = message }, finished)
    end)
  end)
end

function M.cancel()
  local turn = state.turn
  if not turn then
    return vim.notify('oppx: no turn is running', vim.log.levels.INFO)
  end
  write({ '-- cancelling…' })
  turn.client:request('agent/cancel', {}, function() end)
end

return M
