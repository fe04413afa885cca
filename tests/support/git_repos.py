"""Git repositories with long histories, written in well under a second by `git fast-import`."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path


def repo_of_commits(repo: Path, messages: Sequence[str], seconds_apart: int) -> Path:
    """`repo`, a new repository on `main` with one commit per message (oldest first), `seconds_apart` apart,
    by 13 committers touching 50 files."""
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    chunks: list[bytes] = []
    for i, message in enumerate(messages):
        msg = message.encode()
        data = f"content {i}\n".encode()
        chunks.append(b"commit refs/heads/main\n")
        chunks.append(
            f"committer Dev {i % 13} <dev{i % 13}@example.com> {1_700_000_000 + i * seconds_apart} +0000\n".encode()
        )
        chunks.append(f"data {len(msg)}\n".encode() + msg)
        chunks.append(f"M 644 inline file{i % 50}.txt\ndata {len(data)}\n".encode() + data + b"\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(chunks), check=True)
    subprocess.run(["git", "checkout", "-q", "main"], cwd=repo, check=True)
    return repo
