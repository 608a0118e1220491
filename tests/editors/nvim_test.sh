#!/usr/bin/env bash
# The Neovim plugin (editors/nvim) end to end, headless: a temp HOME and XDG folders of its own, the
# real oppx (the plugin runs its `oppx daemon start`), the scripted model server and the agent's
# test connector; nvim_test.lua beside this file drives the commands. Exit 77 (skipped) without nvim.
#   usage: nvim_test.sh <oppx> <source folder> [<npm folder>]
set -uo pipefail
[ $# -ge 2 ] || {
  printf 'usage: nvim_test.sh <oppx> <source folder> [<npm folder>]\n' >&2
  exit 2
}
oppx=$1
src=$2
npm=${3:-}
if ! command -v nvim >/dev/null 2>&1; then
  printf 'SKIP: nvim is not installed (apt-get install neovim)\n'
  exit 77
fi
if ! command -v node >/dev/null 2>&1; then
  printf 'SKIP: node is not installed (the model server and the connector are node scripts)\n'
  exit 77
fi

root=$(mktemp -d "${TMPDIR:-/tmp}/oppx-nvim-XXXXXX") || exit 1
cleanup() {
  "$oppx" daemon stop >/dev/null 2>&1
  rm -rf "$root"
}
trap cleanup EXIT
mkdir -p "$root"/{run,state,config,cache,data} "$root/repo/.git"
chmod 700 "$root/run"
export HOME=$root XDG_RUNTIME_DIR=$root/run XDG_STATE_HOME=$root/state XDG_CONFIG_HOME=$root/config \
  XDG_CACHE_HOME=$root/cache XDG_DATA_HOME=$root/data
unset OPPX_SOCKET OPPX_SERVER OPPX_MODEL
export OPPX_TEST_OPPX=$oppx OPPX_TEST_SUPPORT=$src/tests/support OPPX_TEST_ROOT=$root
export OPPX_TEST_EVERYTHING=${npm:+$npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js}

cd "$root/repo" || exit 1
nvim --headless -u NONE -i NONE --cmd "set rtp+=$src/editors/nvim" -c "luafile $src/tests/editors/nvim_test.lua"
status=$?
if [ "$status" -ne 0 ]; then
  printf 'nvim_test: failed (exit %d); the daemon log:\n' "$status"
  tail -n 40 "$root/state/oppx/oppxd.log" 2>/dev/null
fi
exit "$status"
