"""`intent-loop mcp`: run the MCP server on stdin/stdout, as dist/intent-loop-mcp does."""


def register(subparsers):
    p = subparsers.add_parser("mcp", help="run the MCP server Codex starts (JSON-RPC on stdin/stdout)",
                              description="Serve intent-loop's MCP tools over newline-delimited JSON-RPC on "
                                          "stdin/stdout until end of input or SIGTERM (docs/mcp.md). "
                                          "dist/intent-loop-mcp is the same server with a faster start.")
    p.set_defaults(func=cmd_mcp)


def cmd_mcp(args, console):
    from intent_loop.mcp.server import serve_stdio

    serve_stdio(env=console.env)
    return 0
