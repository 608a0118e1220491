-- The commands of oppx for Neovim (lua/oppx/init.lua does the work, loaded on first use).
if vim.g.loaded_oppx then
  return
end
vim.g.loaded_oppx = true

vim.api.nvim_create_user_command('OppxConnectors', function()
  require('oppx').connectors()
end, { desc = "oppx: list the daemon's connectors for this folder" })

vim.api.nvim_create_user_command('OppxAsk', function(opts)
  require('oppx').ask(opts.args)
end, { nargs = '*', desc = "oppx: ask the daemon's agent, in oppx://chat" })
