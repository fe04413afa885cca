"""`offload-mcp` (the console script) and `python -m offload_mcp`: the CLI, started with the cyclic
garbage collector paused.

Start-up imports the MCP SDK, pydantic and our own models: objects that live as long as the
process, which a running collector would walk again and again while they are made (docs/design.md,
"Startup"). `cli.main` turns the collector back on for every command but serve, which does so once
its start-up heap is frozen (commands/serve.py); the few cycles start-up left are kept.
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
