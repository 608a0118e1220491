-- What the plugin's buffers share: text from the daemon and its servers cleaned of control
-- characters before it reaches a buffer, and the scratch buffers (oppx://…) it shows.
local M = {}

-- `text` without C0 controls (but tab, and newline when `keep_newlines`), DEL and the C1 controls
-- (U+0080–U+009F): an escape sequence from a server must not reach the screen.
function M.clean(text, keep_newlines)
  text = tostring(text or '')
  text = text:gsub('\r\n', '\n')
  if keep_newlines then
    text = text:gsub('[%z\1-\8\11-\31\127]', '')
  else
    text = text:gsub('\n', ' '):gsub('[%z\1-\8\11-\31\127]', '')
  end
  return (text:gsub('\194[\128-\159]', ''))
end

-- `text` cleaned and split into buffer lines.
function M.lines(text)
  return vim.split(M.clean(text, true), '\n', { plain = true })
end

-- The scratch buffer named `name`, made when missing, shown in the current window unless a
-- window shows it already.
function M.scratch(name, filetype)
  local buf = vim.fn.bufnr(name)
  if buf == -1 or not vim.api.nvim_buf_is_valid(buf) then
    buf = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_name(buf, name)
    vim.api.nvim_buf_set_option(buf, 'buftype', 'nofile')
    vim.api.nvim_buf_set_option(buf, 'bufhidden', 'hide')
    vim.api.nvim_buf_set_option(buf, 'swapfile', false)
    vim.api.nvim_buf_set_option(buf, 'modifiable', false)
    vim.api.nvim_buf_set_option(buf, 'filetype', filetype)
  end
  if vim.fn.bufwinid(buf) == -1 then
    vim.api.nvim_set_current_buf(buf)
  end
  return buf
end

-- Replaces lines [first, last) of `buf` (the plugin's buffers are not modifiable by hand).
function M.set_lines(buf, first, last, lines)
  vim.api.nvim_buf_set_option(buf, 'modifiable', true)
  vim.api.nvim_buf_set_lines(buf, first, last, false, lines)
  vim.api.nvim_buf_set_option(buf, 'modifiable', false)
end

-- Moves the cursor of every window showing `buf` to its last line, so a stream stays in view.
function M.follow(buf)
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    vim.api.nvim_win_set_cursor(win, { last, 0 })
  end
end

function M.error(message)
  vim.notify('oppx: ' .. message, vim.log.levels.ERROR)
end

-- An error reply's message and, when it has them, its numbered steps.
function M.error_lines(err)
  local out = M.lines(err.message or 'unknown error')
  local steps = (type(err.data) == 'table' and type(err.data.steps) == 'table') and err.data.steps or {}
  for i, step in ipairs(steps) do
    table.insert(out, string.format('  %d. %s', i, M.clean(step)))
  end
  return out
end

return M
