// Where oppx keeps its files (SPEC §1). Every path follows the XDG variables, so a test that sets
// HOME and XDG_* to a temp folder never touches the user's files.
#pragma once

#include <string>
#include <string_view>

namespace oppx::paths {

std::string home();
std::string state_dir();        // $XDG_STATE_HOME/oppx, else ~/.local/state/oppx
std::string config_dir();       // $XDG_CONFIG_HOME/oppx, else ~/.config/oppx
std::string daemon_log();       // state_dir()/oppxd.log
std::string data_dir();         // $XDG_DATA_HOME/oppx, else ~/.local/share/oppx: the engine folder
std::string cache_dir();        // $XDG_CACHE_HOME/oppx, else ~/.cache/oppx
std::string results_dir();      // cache_dir()/results: the whole of tool results cut for the model
std::string user_mcp_config();  // $OPPX_MCP_CONFIG, else config_dir()/mcp.json

// Socket: `explicit_path` (--socket), else $OPPX_SOCKET, else $XDG_RUNTIME_DIR/oppx/oppxd.sock,
// else /tmp/oppx-$UID/oppxd.sock.
std::string socket_path(std::string_view explicit_path = {});
std::string lock_path(const std::string& socket);        // one daemon per socket: flock on it
std::string start_lock_path(const std::string& socket);  // CLIs starting a daemon take turns on it
// The daemon's streamable-HTTP MCP socket beside `socket`: oppxd.sock -> oppxd-mcp.sock.
std::string mcp_http_socket(const std::string& socket);

}  // namespace oppx::paths
