"""Processes seen from outside: a parent's children, whether one still runs, and a command run without root's privileges."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest


def child_pids(parent: int, needle: str = "") -> list[int]:
    """The live children of `parent` (no zombies), with `needle` in their command line when one is given."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, ppid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(ppid) == parent and state != "Z" and needle in cmdline:
            pids.append(int(entry.name))
    return pids


def alive(pid: int) -> bool:
    """Running, not a zombie (an exited child not yet reaped still has a /proc entry)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def run_unprivileged(args: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    """Permissions do not bind root: as root, run inside a fresh user namespace (uid nobody, no capabilities)."""
    if os.geteuid() == 0:
        probe = subprocess.run(["unshare", "-U", "true"], capture_output=True)
        if probe.returncode != 0:
            pytest.skip("running as root without `unshare -U`: file permissions cannot be made to bind")
        args = ["unshare", "-U", *args]
    return subprocess.run(args, capture_output=True, text=True, timeout=60, **kw)
