"""`offload-mcp` (the console script) and `python -m offload_mcp`: the CLI, started with the cyclic
garbage collector paused.

Start-up imports the MCP SDK, pydantic and our own models: ~110K objects that live as long as the
process. Left on, the collector walks them again and again while they are made: `offload-mcp serve`
with one downstream server ran 271 collections, 3 of them over the whole heap, ~200 ms of
gc.callbacks time. Side by side, 20 starts each: initialize answered 1300 -> 1157 ms, process CPU
1467 -> 1343 ms (with one full collection left, serve's own before its gc.freeze; that one is gone
too now, see commands/serve.py). `cli.main` turns the collector back on for every command but
serve, which does so once its start-up heap is frozen; the cycles start-up left (~0.6 MB) are kept.
"""

from __future__ import annotations

import gc
import sys


def main() -> int:
    gc.disable()
    from .cli import main as run_cli

    return run_cli()


if __name__ == "__main__":
    sys.exit(main())
