"""An MCP server on the official Python SDK (PyPI `mcp`, installed into
target/tools/mcp-python by scripts/install-mcp-servers.sh) for pi-rpc's MCP
tests, over streamable HTTP on 127.0.0.1 (a free port, printed as
`LISTENING <port>` on stderr) or over stdio (`--stdio`).

Tools: `echo` answers; `slow` sleeps and writes `started <id>`, then
`cancelled <id> <unix time>` or `finished <id>` to $EVENTS_FILE, so a test can
tell a cancelled call from one that ran to the end; `fail` returns an error
result (`isError`); `stop_server` ends the process in the middle of the call.
One resource, `memo://note`.
"""

import os
import socket
import sys
import time

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("python-test-server", instructions="Tools of the Python SDK test server.")


def record(line: str) -> None:
    path = os.environ.get("EVENTS_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


@server.tool(description="Echo the text back")
def echo(text: str) -> str:
    return f"python echo: {text}"


@server.tool(description="Sleep for the given seconds, then answer")
async def slow(seconds: float, label: str = "slow") -> str:
    record(f"started {label}")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        record(f"cancelled {label} {time.time():.3f}")
        raise
    record(f"finished {label}")
    return f"slept {seconds} s"


@server.tool(description="Fail with the given message")
def fail(message: str) -> str:
    raise ToolError(message)


@server.tool(description="Stop the server process in the middle of the call")
def stop_server() -> str:
    os._exit(4)


@server.resource("memo://note", name="note", description="A short note", mime_type="text/plain")
def note() -> str:
    return "remember the milk"


async def serve_http() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    sys.stderr.write(f"LISTENING {sock.getsockname()[1]}\n")
    sys.stderr.flush()
    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning")
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    if "--stdio" in sys.argv:
        server.run("stdio")
    else:
        anyio.run(serve_http)
