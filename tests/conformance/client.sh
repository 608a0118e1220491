#!/bin/sh
# The client under test of the MCP conformance harness (run.sh): oppx driven as a user would. The
# harness appends its test server's URL and names the scenario in MCP_CONFORMANCE_SCENARIO.
#   usage: client.sh OPPX URL
set -eu
oppx=$1
url=$2
"$oppx" mcp add conformance --force --url "$url"
case "${MCP_CONFORMANCE_SCENARIO:-}" in
  initialize) "$oppx" mcp tools conformance ;;
  tools_call) "$oppx" mcp call conformance add_numbers '{"a":2,"b":40}' ;;
  sse-retry) "$oppx" mcp call conformance test_reconnection '{}' ;;
  *)
    echo "client.sh: no steps for scenario \"${MCP_CONFORMANCE_SCENARIO:-}\"" >&2
    exit 2
    ;;
esac
# The session ends (DELETE) and its streams close, so that the harness's server can stop.
"$oppx" mcp remove conformance
