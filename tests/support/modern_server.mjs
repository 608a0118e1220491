// modern_server.mjs: a small but real MCP server for oppx's tests, built on the
// official TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0). It serves
// protocol revision 2026-07-28 (server/discover, per-request `_meta` envelope,
// multi round-trip `input_required` results). Because it uses the SDK's own
// serving entries, it ALSO serves 2025-era clients that open with `initialize`.
//
// Usage:
//   node modern_server.mjs stdio   newline-delimited JSON-RPC on stdin/stdout
//   node modern_server.mjs http    streamable HTTP at http://127.0.0.1:N/mcp;
//                                  prints "listening on port N" to stderr (N: $PORT when set)
//
// The SDK is loaded from the node_modules folder named by env var
// OPPX_MODERN_SDK when it is set (ES modules ignore NODE_PATH), otherwise
// from the bare specifier "@modelcontextprotocol/server".
//
// Tools: echo {message}, add {a, b}, confirm (asks for {name, count} through
// an elicitation form carried by an input_required result), the resource note://base, grow (adds
// a tool `grown` and the resource note://grown for every client from then on and announces them with
// notifications/tools/list_changed to `subscriptions/listen` subscribers).

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';

// Imports one export of the SDK package ('.' or './stdio'), honouring OPPX_MODERN_SDK.
async function sdk(subpath) {
    const dir = process.env.OPPX_MODERN_SDK;
    if (!dir) return import(path.posix.join('@modelcontextprotocol/server', subpath));
    const pkg = path.join(dir, '@modelcontextprotocol', 'server');
    const exports = JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf8')).exports;
    return import(pathToFileURL(path.join(pkg, exports[subpath].import.default)).href);
}

const { McpServer, fromJsonSchema, inputRequired, inputResponse, createMcpHandler } = await sdk('.');

// Tool input schemas as plain JSON Schema (the SDK validates them with its bundled AJV).
const object = (properties, required) => fromJsonSchema({ type: 'object', properties, required });
const text = s => ({ content: [{ type: 'text', text: s }] });

// The form `confirm` asks for.
const confirmForm = {
    type: 'object',
    properties: {
        name: { type: 'string', title: 'Name' },
        count: { type: 'integer', title: 'Count', default: 2 }
    },
    required: ['name']
};
const CONFIRM_STATE = 'confirm-round-1'; // opaque state echoed back by the client

// Module-level so it outlives the per-request instances of the HTTP handler:
// once `grow` has run, every instance built afterwards lists `grown` too.
let grown = false;
// Announces a tool-list change beyond the instance that ran `grow`. On stdio
// the SDK's listen router already rewrites the long-lived instance's own
// list_changed onto the open subscriptions, so this stays a no-op; over HTTP
// it publishes on the handler's event bus (set below).
let announceToolsChanged = () => {};

// One factory backs every serving unit (one HTTP request, or one stdio connection).
function makeServer() {
    const server = new McpServer(
        { name: 'oppx-modern-test-server', version: '1.0.0' },
        // lets subscriptions/listen honour toolsListChanged and resourcesListChanged
        { capabilities: { tools: { listChanged: true }, resources: { listChanged: true } } }
    );

    // A resource, and one more once `grow` has run (announced as a resources list change).
    const note = (name, body) =>
        server.registerResource(name, `note://${name}`, { mimeType: 'text/plain' }, async uri => ({
            contents: [{ uri: uri.href, text: body }]
        }));
    note('base', 'the base note');
    if (grown) note('grown', 'the grown note');

    server.registerTool(
        'echo',
        {
            description: 'Echoes the message back',
            inputSchema: object({ message: { type: 'string' } }, ['message']),
            annotations: { readOnlyHint: true }
        },
        async ({ message }) => text(`Echo: ${message}`)
    );

    server.registerTool(
        'add',
        {
            description: 'Adds two numbers',
            inputSchema: object({ a: { type: 'number' }, b: { type: 'number' } }, ['a', 'b']),
            annotations: { readOnlyHint: true }
        },
        async ({ a, b }) => text(`The sum of ${a} and ${b} is ${a + b}.`)
    );

    // Multi round-trip: the first call answers input_required with an
    // elicitation/create form; the retry carries inputResponses + requestState.
    // (For a 2025-era client the SDK's legacy shim turns this into a real
    // server->client elicitation/create request instead.)
    server.registerTool(
        'confirm',
        { description: 'Asks the user for a name and a count', inputSchema: object({}, []) },
        async (_args, ctx) => {
            const answer = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
            if (answer.kind !== 'elicit' || ctx.mcpReq.requestState() !== CONFIRM_STATE) {
                return inputRequired({
                    inputRequests: {
                        confirm: inputRequired.elicit({ message: 'Who is confirming, and how many?', requestedSchema: confirmForm })
                    },
                    requestState: CONFIRM_STATE
                });
            }
            if (answer.action === 'decline') return text('declined');
            if (answer.action === 'cancel') return text('cancelled');
            const { name, count = 2 } = answer.content ?? {};
            return text(`confirmed ${name} x${count}`);
        }
    );

    const addGrown = () => server.registerTool('grown', { description: 'Added by grow', inputSchema: object({}, []) }, async () => text('grown'));
    if (grown) addGrown();

    // Registering on a connected instance makes the SDK send
    // notifications/tools/list_changed (stdio: stamped onto each listen
    // subscription; HTTP: dropped by the per-request transport, hence the bus).
    server.registerTool(
        'grow',
        { description: 'Adds the tool `grown`', inputSchema: object({}, []), annotations: { readOnlyHint: false } },
        async () => {
            if (grown) return text('already grown');
            grown = true;
            addGrown();
            note('grown', 'the grown note');
            announceToolsChanged();
            return text('grew: added tool grown');
        }
    );
    return server;
}

const mode = process.argv[2];
if (mode === 'stdio') {
    const { serveStdio } = await sdk('./stdio');
    serveStdio(makeServer, { onerror: e => console.error('mcp error:', e.message) });
} else if (mode === 'http') {
    // createMcpHandler is fetch-shaped (web Request -> Response); adapt node:http to it.
    const handler = createMcpHandler(makeServer, { onerror: e => console.error('mcp error:', e.message) });
    // Open subscriptions/listen streams (one per listen POST) subscribe to the handler's bus.
    announceToolsChanged = () => handler.notify.toolsChanged();
    const httpServer = http.createServer(async (req, res) => {
        try {
            const url = new URL(req.url, 'http://127.0.0.1');
            if (url.pathname !== '/mcp') return void res.writeHead(404).end('not found\n');
            const headers = new Headers();
            for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
            const chunks = [];
            for await (const chunk of req) chunks.push(chunk);
            const aborter = new AbortController();
            res.on('close', () => res.writableFinished || aborter.abort());
            const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
            const response = await handler.fetch(
                new Request(url, { method: req.method, headers, body: hasBody ? Buffer.concat(chunks) : undefined, signal: aborter.signal })
            );
            res.writeHead(response.status, Object.fromEntries(response.headers));
            res.flushHeaders();
            if (response.body) Readable.fromWeb(response.body).on('error', () => res.destroy()).pipe(res);
            else res.end();
        } catch (e) {
            if (!res.headersSent) res.writeHead(500);
            res.end(String(e));
        }
    });
    httpServer.listen(Number(process.env.PORT || 0), '127.0.0.1', () => console.error(`listening on port ${httpServer.address().port}`));
} else {
    console.error('usage: node modern_server.mjs stdio|http');
    process.exit(2);
}
