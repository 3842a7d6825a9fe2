"""A tiny real MCP server on stdio (the `mcp` SDK's `MCPServer`), standing in for an MCP
server an ACP client hands the agent in `session/new`'s `mcpServers`.

It offers one tool, `shout`, which answers its text in capitals followed by the value of
the `MILK_MCP_MARK` environment variable, so a test can see that the server ran with the
environment the client gave it. With `--log FILE`, each call is also appended to FILE as one
JSON line (the server's stdout is the protocol).

    python -m tests.fakes.mcp_stdio_server [--log FILE]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer

SERVER_NAME = "milk-test-tools"
TOOL = "shout"


def build(log: Path | None) -> MCPServer:
    server = MCPServer(SERVER_NAME)

    @server.tool(name=TOOL, description="Answer the text in capital letters.")
    def shout(text: str) -> str:
        answer = text.upper() + os.environ.get("MILK_MCP_MARK", "")
        if log is not None:
            with log.open("a", encoding="utf-8") as out:
                out.write(json.dumps({"tool": TOOL, "text": text, "answer": answer}) + "\n")
        return answer

    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--log", type=Path)
    args = parser.parse_args(argv)
    build(args.log).run("stdio")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
