#!/bin/sh
# The client under test of the MCP conformance harness (run.sh): oppx driven as a user would. The
# harness appends its test server's URL, names the scenario in MCP_CONFORMANCE_SCENARIO and, for
# some, gives what a user would know beforehand in MCP_CONFORMANCE_CONTEXT (a JSON object).
#   usage: client.sh OPPX URL
set -eu
oppx=$1
url=$2
here=$(cd "$(dirname "$0")" && pwd)
scenario=${MCP_CONFORMANCE_SCENARIO:-}

# A member of the context, or empty.
context() {
  node -e 'const c = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}"); process.stdout.write(String(c[process.argv[1]] ?? ""))' "$1"
}

case "$scenario" in
  initialize)
    "$oppx" mcp add conformance --force --url "$url"
    "$oppx" mcp tools conformance
    ;;
  tools_call)
    "$oppx" mcp add conformance --force --url "$url"
    "$oppx" mcp call conformance add_numbers '{"a":2,"b":40}'
    ;;
  request-metadata)
    # Every request's metadata is checked (2026-07-28): a listing is requests enough.
    "$oppx" mcp add conformance --force --url "$url"
    "$oppx" mcp tools conformance
    ;;
  http-custom-headers)
    # The calls the scenario asks for, with their arguments (its context's toolCalls).
    "$oppx" mcp add conformance --force --url "$url"
    calls=$(node -e 'const c = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}");
      for (const t of c.toolCalls || []) console.log(t.name + " " + JSON.stringify(t.arguments));')
    printf '%s\n' "$calls" | while read -r tool args; do
      "$oppx" mcp call conformance "$tool" "$args"
    done
    ;;
  http-invalid-tool-headers)
    # Every tool oppx lists is called: one with invalid x-mcp-header marks must not be listed.
    "$oppx" mcp add conformance --force --url "$url"
    for tool in $("$oppx" mcp tools conformance --json | node -e '
      const l = JSON.parse(require("fs").readFileSync(0, "utf8"));
      console.log(l.tools.map((t) => t.name).join("\n"));'); do
      "$oppx" mcp call conformance "$tool" '{"region":"us-west1"}'
    done
    ;;
  json-schema-ref-no-deref)
    # The tools' schemas as the server wrote them: listed, never a network $ref fetched.
    "$oppx" mcp add conformance --force --url "$url"
    "$oppx" mcp tools conformance --json >/dev/null
    ;;
  json-schema-2020-12-preservation)
    # The other tool's inputSchema as oppx lists it (--json), sent back to json_schema_echo, which
    # compares it with what the server wrote.
    "$oppx" mcp add conformance --force --url "$url"
    args=$("$oppx" mcp tools conformance --json | node -e '
      const l = JSON.parse(require("fs").readFileSync(0, "utf8"));
      const t = l.tools.find((x) => x.name !== "json_schema_echo");
      process.stdout.write(JSON.stringify({ schema: t.inputSchema }));')
    "$oppx" mcp call conformance json_schema_echo "$args"
    ;;
  http-standard-headers)
    "$oppx" mcp add conformance --force --url "$url"
    "$oppx" mcp call conformance test_headers '{}'
    "$oppx" mcp call conformance my-hyphenated-tool '{}'
    ;;
  elicitation-sep1034-client-defaults)
    # The form is accepted as the server filled it in (a script's answer: --elicit accept-defaults).
    "$oppx" mcp add conformance --force --url "$url"
    "$oppx" mcp call conformance test_client_elicitation_defaults '{}' --elicit accept-defaults
    ;;
  sep-2322-client-request-state)
    # Calls whose results ask for input (answered with the form's defaults) and calls that do not.
    "$oppx" mcp add conformance --force --url "$url"
    "$oppx" mcp call conformance test_mrtr_echo_state '{}' --elicit accept-defaults
    "$oppx" mcp call conformance test_mrtr_unrelated '{}'
    "$oppx" mcp call conformance test_mrtr_no_state '{}' --elicit accept-defaults
    "$oppx" mcp call conformance test_mrtr_no_result_type '{}'
    ;;
  sse-retry)
    "$oppx" mcp add conformance --force --url "$url"
    "$oppx" mcp call conformance test_reconnection '{}'
    ;;
  auth/*)
    # The browser: a page that logs the user in at once and redirects back (the harness's
    # authorization server does), so fetching it with its redirects followed is the whole login.
    export BROWSER="node $here/browser.js"
    # A client ID metadata document the user has published (basic-cimd checks this URL).
    export OPPX_OAUTH_CLIENT_METADATA_URL=https://conformance-test.local/client-metadata.json
    client_id=$(context client_id)
    if [ -n "$client_id" ]; then
      # A client registered beforehand: its secret kept in the environment, referenced by name.
      OPPX_CONFORMANCE_CLIENT_SECRET=$(context client_secret)
      export OPPX_CONFORMANCE_CLIENT_SECRET
      # shellcheck disable=SC2016 # the reference is written as it is, expanded by oppxd
      "$oppx" mcp add conformance --force --url "$url" --client-id "$client_id" \
        --client-secret '${OPPX_CONFORMANCE_CLIENT_SECRET}'
    else
      "$oppx" mcp add conformance --force --url "$url"
    fi
    if ! "$oppx" mcp login conformance || ! "$oppx" mcp tools conformance; then
      # The server no longer takes the login (authorization-server-migration: its protected
      # resource moved to another authorization server): logged in again, as the steps say.
      "$oppx" mcp login conformance
      "$oppx" mcp tools conformance
    fi
    "$oppx" mcp call conformance test-tool '{}'
    ;;
  *)
    echo "client.sh: no steps for scenario \"$scenario\"" >&2
    exit 2
    ;;
esac
# The session ends (DELETE) and its streams close, so that the harness's server can stop.
"$oppx" mcp remove conformance
