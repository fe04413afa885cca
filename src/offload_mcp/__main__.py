"""`offload-mcp` (the console script) and `python -m offload_mcp`: the CLI, started with the cyclic
garbage collector paused.

Start-up imports the MCP SDK, pydantic and our own models: ~110K objects that live as long as the
process. Left on, the collector walks them again and again while they are made: 271 collections,
3 of them over the whole heap, ~200 ms of `offload-mcp serve`'s ~1.2 s of start-up CPU (one
downstream server, measured with gc.callbacks); paused, the same start-up spends ~100 ms in its one
collection. Nothing is lost by the pause: cycles made meanwhile wait for that collection. `cli.main`
turns the collector back on for every command but serve, which does so once its start-up heap is
collected and frozen (commands/serve.py).
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
