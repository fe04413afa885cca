"""The relay fixture server (tests/fixtures/relay_server.py) behind the proxy, and waiting for what it relays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from support.servers import RELAY_SERVER, python_entry, write_config


def relay_config(tmp_path: Path, offload: dict[str, Any] | None = None) -> list[str]:
    return ["-c", str(write_config(tmp_path, {"relay": python_entry(RELAY_SERVER)}, offload))]


async def wait_for(predicate: Any, seconds: float = 10.0) -> None:
    with anyio.fail_after(seconds):
        while not predicate():
            await anyio.sleep(0.05)
