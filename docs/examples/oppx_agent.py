#!/usr/bin/env python3
"""A minimal client of oppxd's agent, written from docs/protocol.md alone (standard library only).

It does what an editor plugin does: connect to the daemon's socket, say hello, open the agent
for a folder, run one turn while printing the reply as it streams, answer the daemon's questions
(agent/ask, and a connector's own question to the user, mcp/elicit), and cancel the turn on
Ctrl-C (agent/cancel).

    oppx_agent.py [--cwd DIR] [--answer yes|no|always|ask] MESSAGE...

--answer says what to answer when the agent asks permission for a call: yes (once), no, always
(a rule for that tool), or ask (the default: ask on the terminal); for a connector's form, yes
and always send its defaults, no declines. The daemon must be running
(`oppx daemon start`); the model server comes from OPPX_SERVER or config.json as for `oppx -p`.
Exit status: 0 a reply, 1 the turn failed or was cancelled, 3 no daemon.
"""

import argparse
import json
import os
import signal
import socket
import sys


def socket_path():
    if os.environ.get("OPPX_SOCKET"):
        return os.environ["OPPX_SOCKET"]
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/"):
        return os.path.join(runtime, "oppx", "oppxd.sock")
    return "/tmp/oppx-%d/oppxd.sock" % os.geteuid()


class Daemon:
    """One connection: newline-delimited JSON-RPC 2.0, requests and notifications both ways."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buffer = b""
        self.next_id = 1
        self.on_event = lambda params: None
        self.on_ask = lambda params: {"answer": "no"}

    def send(self, message):
        message["jsonrpc"] = "2.0"
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def read(self):
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the daemon closed the connection")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def request(self, method, params):
        """Sends a request and waits for its answer, handling what comes meanwhile."""
        my_id = self.next_id
        self.next_id += 1
        self.send({"id": my_id, "method": method, "params": params})
        while True:
            message = self.read()
            if "method" in message and "id" in message:  # the daemon asks (agent/ask, mcp/elicit)
                if message["method"] == "mcp/elicit":
                    answer = self.on_elicit(message.get("params", {}))
                else:
                    answer = self.on_ask(message.get("params", {}))
                self.send({"id": message["id"], "result": answer})
            elif "method" in message:  # a notification (agent/event)
                if message["method"] == "agent/event":
                    self.on_event(message.get("params", {}))
            elif message.get("id") == my_id:
                if "error" in message:
                    raise RuntimeError(message["error"])
                return message["result"]

    def cancel_turn(self):
        """agent/cancel: its answer is read by the request still waiting for agent/turn."""
        self.send({"id": "cancel-%d" % self.next_id, "method": "agent/cancel", "params": {}})


def ask_user(question, policy):
    if question["action"] == "login":
        # A wider login for a connector: this example runs no browser login; `oppx mcp login NAME`
        # does it, then ask again.
        name = question.get("arguments", {}).get("connector", "")
        print("\n[oppx] %s: %s; run `oppx mcp login %s`" % (name, question.get("why", ""), name), file=sys.stderr)
        return {"answer": "no"}
    what = question.get("command") or question["action"]
    print("\n[oppx asks] %s: %s" % (what, question.get("why", "")), file=sys.stderr)
    if policy == "yes":
        return {"answer": "yes"}
    if policy == "no":
        return {"answer": "no"}
    if policy == "always":
        return {"answer": "yes" if question.get("once_only") else "always_tool"}
    reply = input("allow? [y/N] ").strip().lower()
    return {"answer": "yes" if reply == "y" else "no"}


def elicit(question, policy):
    """A connector's server asks the user (a form, or an address to open): this example offers
    the form's defaults, or says it opened the address; the daemon checks the form's answer."""
    name = question.get("connector", "")
    if question.get("mode") == "url":
        print("\n[%s asks] %s\n  open: %s" % (name, question.get("message", ""), question.get("url", "")), file=sys.stderr)
        if policy == "ask":
            return {"action": "accept" if input("opened it? [y/N] ").strip().lower() == "y" else "decline"}
        return {"action": "accept" if policy in ("yes", "always") else "decline"}
    fields = question.get("schema", {}).get("properties", {})
    defaults = {k: f["default"] for k, f in fields.items() if isinstance(f, dict) and "default" in f}
    print("\n[%s asks] %s\n  defaults: %s" % (name, question.get("message", ""), json.dumps(defaults)), file=sys.stderr)
    if policy == "ask":
        accept = input("send the defaults? [y/N] ").strip().lower() == "y"
    else:
        accept = policy in ("yes", "always")
    return {"action": "accept", "content": defaults} if accept else {"action": "decline"}


def show_event(event):
    kind = event.get("kind")
    if kind == "text":
        sys.stdout.write(event["text"])
        sys.stdout.flush()
    elif kind == "notice":
        print("[notice] " + event["text"], file=sys.stderr)
    elif kind == "action":
        action = event["action"]
        print("[%s] %s" % (action["status"], action["name"]), file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description="One turn of oppxd's agent.")
    parser.add_argument("--cwd", default=os.getcwd())
    parser.add_argument("--answer", choices=["yes", "no", "always", "ask"], default="ask")
    parser.add_argument("message", nargs="+")
    args = parser.parse_args()

    try:
        daemon = Daemon(socket_path())
    except OSError as e:
        print("oppx_agent: no daemon at %s (%s); run `oppx daemon start`" % (socket_path(), e), file=sys.stderr)
        return 3
    daemon.on_event = show_event
    daemon.on_ask = lambda q: ask_user(q, args.answer)
    daemon.on_elicit = lambda q: elicit(q, args.answer)
    # The environment names the model server (OPPX_SERVER) and expands ${VAR} in connectors.
    daemon.request("hello", {"protocol": 1, "client": "oppx_agent.py", "env": dict(os.environ), "cwd": args.cwd})
    try:
        info = daemon.request("agent/open", {"cwd": args.cwd, "mode": "chat", "can_ask": True})
    except RuntimeError as e:
        error = e.args[0]
        print("oppx_agent: %s" % error["message"], file=sys.stderr)
        for i, step in enumerate(error.get("data", {}).get("steps", []), 1):
            print("  %d. %s" % (i, step), file=sys.stderr)
        return 1
    print("[model %s, %d tools]" % (info["model"], len(info["tools"])), file=sys.stderr)

    # Ctrl-C (SIGINT) cancels the turn; the turn's own answer then says it was cancelled.
    signal.signal(signal.SIGINT, lambda signum, frame: daemon.cancel_turn())
    result = daemon.request("agent/turn", {"message": " ".join(args.message)})
    if result["reply"] and not result["reply"].endswith("\n"):
        print()
    if result.get("cancelled"):
        print("[cancelled]", file=sys.stderr)
        return 1
    if result.get("error"):
        print("oppx_agent: %s" % result["error"]["message"], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
