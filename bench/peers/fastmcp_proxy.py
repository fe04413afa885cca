"""FastMCP's proxy with its ResponseLimitingMiddleware, as a stdio server (runs in its own venv).

Usage: python fastmcp_proxy.py [--max-size BYTES] CMD [ARGS...]
`--max-size 0` runs the proxy without the middleware (the plain FastMCP hop).
This is what most Python users would reach for to keep results small: it
truncates the serialized result to `max_size` bytes and appends
"[Response truncated due to size limit]"; the cut bytes are gone.
"""

from __future__ import annotations

import argparse
import os
import sys


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-size", type=int, default=1_000_000)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = [c for c in args.command if c != "--"]
    os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
    os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")

    from fastmcp.client.transports import StdioTransport
    from fastmcp.server import create_proxy
    from fastmcp.server.middleware.response_limiting import ResponseLimitingMiddleware

    proxy = create_proxy(
        StdioTransport(command=command[0], args=command[1:], env=dict(os.environ)), name="fastmcp-bench-proxy"
    )
    if args.max_size > 0:
        proxy.add_middleware(ResponseLimitingMiddleware(max_size=args.max_size))
    proxy.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    sys.exit(main())
