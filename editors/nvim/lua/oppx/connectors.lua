-- :OppxConnectors: the buffer oppx://connectors lists each connector of mcp/list (for the current
-- folder): name, state, tool count and, when it is not running, why and the numbered steps.
-- <CR> on a connector's lines shows its tools (mcp/tools) in oppx://tools/<name>.
local ui = require('oppx.ui')

local M = {}

local names = {} -- buffer -> {line number -> connector name} of its connectors' first lines

local function str(v)
  return (v ~= nil and v ~= vim.NIL) and ui.clean(v) or ''
end

local function render(result)
  local lines, first = {}, {}
  table.insert(lines, 'oppx connectors for ' .. vim.fn.getcwd() .. '   (<CR>: its tools)')
  local notes = { str(result.error), str(result.consent_error) }
  if type(result.project) == 'table' then
    table.insert(notes, str(result.project.error))
    vim.list_extend(notes, vim.tbl_map(str, result.project.warnings or {}))
  end
  vim.list_extend(notes, vim.tbl_map(str, result.warnings or {}))
  for _, note in ipairs(notes) do
    if note ~= '' then
      table.insert(lines, '! ' .. note)
    end
  end
  local connectors = result.connectors or {}
  if #connectors == 0 then
    table.insert(lines, 'No connectors: add one with `oppx mcp add <name> -- <command>`.')
  end
  for _, c in ipairs(connectors) do
    local tools = tonumber(c.tools) or 0
    local extra = {}
    if c.source == 'project' then
      table.insert(extra, 'project')
    end
    if c.cached == true then
      table.insert(extra, 'cached list')
    end
    table.insert(
      lines,
      string.format(
        '%-20s %-11s %d tool%s%s',
        str(c.name),
        str(c.state),
        tools,
        tools == 1 and '' or 's',
        #extra > 0 and ('  (' .. table.concat(extra, ', ') .. ')') or ''
      )
    )
    first[#lines] = c.name
    if str(c.reason) ~= '' then
      table.insert(lines, '    ' .. str(c.reason))
    end
    for i, step in ipairs(type(c.steps) == 'table' and c.steps or {}) do
      table.insert(lines, string.format('    %d. %s', i, str(step)))
    end
  end
  return lines, first
end

-- The connector whose lines hold the cursor: the nearest first line at or above it.
local function under_cursor(buf)
  local map = names[buf] or {}
  for line = vim.api.nvim_win_get_cursor(0)[1], 1, -1 do
    if map[line] then
      return map[line]
    end
  end
end

local function show_tools(c, name)
  c:request('mcp/tools', { name = name, cwd = vim.fn.getcwd() }, function(result, err)
    if err then
      return ui.error(table.concat(ui.error_lines(err), '\n'))
    end
    local denied = {}
    for _, d in ipairs(type(result.denied) == 'table' and result.denied or {}) do
      denied[d] = true
    end
    local lines = { string.format('%s: %s, %d tools', str(result.name), str(result.state), #(result.tools or {})) }
    for _, tool in ipairs(result.tools or {}) do
      local description = ui.lines(str(tool.description) ~= '' and tool.description or '')[1] or ''
      local read_only = type(tool.annotations) == 'table' and tool.annotations.readOnlyHint == true
      table.insert(
        lines,
        string.format(
          '  %s%s%s: %s',
          str(tool.name),
          read_only and ' (read-only)' or '',
          denied[tool.name] and ' (denied by a rule)' or '',
          description
        )
      )
    end
    local buf = ui.scratch('oppx://tools/' .. ui.clean(name), 'oppxtools')
    ui.set_lines(buf, 0, -1, lines)
  end)
end

function M.show(c)
  c:request('mcp/list', { cwd = vim.fn.getcwd() }, function(result, err)
    if err then
      return ui.error(table.concat(ui.error_lines(err), '\n'))
    end
    local lines, first = render(result)
    local buf = ui.scratch('oppx://connectors', 'oppxconnectors')
    names[buf] = first
    ui.set_lines(buf, 0, -1, lines)
    vim.keymap.set('n', '<CR>', function()
      local name = under_cursor(buf)
      if name then
        require('oppx').with_client(function(client)
          if client then
            show_tools(client, name)
          end
        end)
      end
    end, { buffer = buf, desc = "oppx: this connector's tools" })
  end)
end

return M
