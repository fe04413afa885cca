"""Peers live in their own virtualenvs under bench/out/, created on demand.

Their pins (fastmcp, headroom-ai and mcp-compressor each want their own mcp
version) never touch the project's environment: each peer runs as a
subprocess with its venv's python. `ensure(name, install=...)` returns the
venv's bin folder, or None with the reason when it is missing and installing
was not allowed (the quick run in CI does not install).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "out"

PEERS = {
    # name: (pip requirement, distribution whose version we report)
    "fastmcp": ("fastmcp>=2.12", ["fastmcp", "mcp"]),
    "headroom": ("headroom-ai[mcp]==0.42.*", ["headroom-ai", "mcp"]),
    "compressor": ("mcp-compressor==0.38.*", ["mcp-compressor"]),
}


@dataclass(frozen=True)
class Peer:
    name: str
    bin: Path | None
    versions: dict[str, str]
    missing_reason: str = ""

    @property
    def python(self) -> Path:
        assert self.bin is not None
        return self.bin / "python"

    @property
    def available(self) -> bool:
        return self.bin is not None


def _versions(bin_dir: Path, dists: list[str]) -> dict[str, str]:
    code = (
        "import json,sys\nfrom importlib.metadata import version\nout={}\n"
        "for d in sys.argv[1:]:\n    try: out[d]=version(d)\n    except Exception: out[d]='?'\nprint(json.dumps(out))"
    )
    proc = subprocess.run([str(bin_dir / "python"), "-c", code, *dists], capture_output=True, text=True)
    return json.loads(proc.stdout) if proc.returncode == 0 else {}


def ensure(name: str, *, install: bool) -> Peer:
    requirement, dists = PEERS[name]
    if os.environ.get("OFFLOAD_BENCH_NO_PEERS") == "1":
        return Peer(name, None, {}, "peers disabled by OFFLOAD_BENCH_NO_PEERS=1")
    venv = OUT / f"venv-{name}"
    bin_dir = venv / "bin"
    marker = venv / ".bench-installed"
    if not marker.exists() or marker.read_text() != requirement:
        if not install:
            return Peer(name, None, {}, f"not installed ({requirement}); the full run installs it into {venv}")
        print(f"[bench] installing {requirement} into {venv} ...", file=sys.stderr, flush=True)
        if not (bin_dir / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        proc = subprocess.run(
            [str(bin_dir / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", requirement],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            return Peer(name, None, {}, f"pip install {requirement} failed: {proc.stderr.strip()[-300:]}")
        marker.write_text(requirement)
    return Peer(name, bin_dir, _versions(bin_dir, dists))
