"""A stdio MCP server that only records what its client offers and answers (issue 37 item 7), for
test_real_claude_code.py: registered beside intent-loop (`claude mcp add`), it writes one JSON line
per message received to LOG, its cwd and Claude Code's variables first, and asks the client for
roots/list once initialized and again at each call of its one tool, `probe_roots`.

    python3 mcp_roots_probe.py LOG
"""
import json
import os
import sys


def main(log_path):
    with open(log_path, "a", encoding="utf-8") as log:
        def note(entry):
            log.write(json.dumps(entry) + "\n")
            log.flush()

        def send(message):
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()

        note({"cwd": os.getcwd(), "env": {k: v for k, v in os.environ.items() if k.startswith("CLAUDE")}})
        asked = 0
        for line in sys.stdin:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            note({"received": message})
            method, ident = message.get("method"), message.get("id")
            if method == "initialize":
                send({"jsonrpc": "2.0", "id": ident, "result": {
                    "protocolVersion": (message.get("params") or {}).get("protocolVersion", "2025-06-18"),
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "roots-probe", "version": "0"}}})
            elif method in ("notifications/initialized", "tools/call"):
                asked += 1
                send({"jsonrpc": "2.0", "id": f"probe-roots-{asked}", "method": "roots/list", "params": {}})
                if method == "tools/call":
                    send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "asked"}]}})
            elif method == "tools/list":
                send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [{
                    "name": "probe_roots", "description": "asks the client for its roots",
                    "inputSchema": {"type": "object", "properties": {}}}]}})
            elif method is not None and ident is not None:  # any other request: an empty answer
                send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main(sys.argv[1])
