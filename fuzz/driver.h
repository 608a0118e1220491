// Shared by the fuzz targets: a private temp folder (the log goes there, never to stderr) and a
// JsonRpcPeer over the real NDJSON transport on one end of a socketpair, fed the fuzz input on the
// other end as a client or an MCP server would send it.
#pragma once

#include "common/jsonrpc_peer.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::fuzz {

// Made once per process (mkdtemp under $TMPDIR), removed at exit; the log is opened there.
const std::string& temp_dir();

// Starts a peer with `options` over the NDJSON transport, lets `before` use it (e.g. send calls),
// writes `input` from the far end, then closes the far end's writing side and runs the loop until
// the peer has closed and its transport has let go of the socket. Returns every byte the peer wrote.
// A peer that never closes is a hang: reported, then abort().
std::string drive_peer(std::string_view input, JsonRpcPeer::Options options,
                       const std::function<void(JsonRpcPeer&)>& before = {});

// The lines the transport hands on: those ended by '\n' (one cut off by the end of the stream is
// dropped), each without its '\n'.
std::vector<std::string_view> complete_lines(std::string_view bytes);

}  // namespace oppx::fuzz
