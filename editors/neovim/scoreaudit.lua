-- scoreaudit's language server in Neovim 0.7 and later (no plugin needed).
-- Put this file on 'runtimepath' (e.g. ~/.config/nvim/plugin/scoreaudit.lua) or `dofile()` it from init.lua.
-- Set vim.g.scoreaudit_cmd to the server command when `scoreaudit` is not on PATH,
-- e.g. { "/path/to/.venv/bin/scoreaudit", "lsp" }.

vim.cmd([[autocmd BufRead,BufNewFile *.audit setfiletype audit]])  -- vim.filetype.add needs 0.8

local function root_of(path)
  local dir = vim.fn.fnamemodify(path, ":p:h")
  local git = vim.fn.finddir(".git", dir .. ";")
  if git ~= "" then
    return vim.fn.fnamemodify(git, ":p:h:h")
  end
  return dir
end

vim.api.nvim_create_autocmd("FileType", {
  pattern = "audit",
  callback = function(args)
    local config = {
      name = "scoreaudit",
      cmd = vim.g.scoreaudit_cmd or { "scoreaudit", "lsp" },
      root_dir = root_of(vim.api.nvim_buf_get_name(args.buf)),
    }
    if vim.lsp.start then -- 0.8+: reuses a running client for the same root
      vim.lsp.start(config, { bufnr = args.buf })
    else -- 0.7
      local id = vim.lsp.start_client(config)
      if id then
        vim.lsp.buf_attach_client(args.buf, id)
      end
    end
  end,
})
