"""Git sessions for replay: a large diff or commit read, then a read of a file it changes.

    python bench/git_reads.py OUT.jsonl.gz                  # from this repository's history
    python bench/git_reads.py OUT.jsonl.gz --repo PATH
    offload-mcp replay OUT.jsonl.gz --client claude-code --json

Each session is two records, as mcp-server-git and server-filesystem would give them: `git.git_diff`
(25 commits back from every 10th commit) or `git.git_show` (one commit) of 30K chars or more (what the
gate stubs), then `filesystem.read_text_file` of the file whose diff sits in the middle of it: what an
agent opens after reading a change. Deterministic for one repository state.

Measured on this repository (default config, --client claude-code, 24 diff and 21 show sessions):
before the stub indexed a diff by its files, 0 of 45 paths were in view (all behind a stub), tokens cut
99.57%; with the files index (policy/index/text_records.py `_diff_files`) 45 of 45, tokens cut 98.62%.
"""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

from code_reads import two_steps, write_sessions  # bench/ is on the path when a script here runs

_FILE = re.compile(r"^diff --git a/\S+ b/(\S+)$", re.M)
_MIN_CHARS, _MAX_CHARS = 30_000, 1_000_000


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=repo, check=True).stdout


def _session(tool: str, call: dict[str, str], output: str, traj: str) -> list[dict[str, object]] | None:
    if not _MIN_CHARS <= len(output) <= _MAX_CHARS:
        return None
    paths = [p for p in _FILE.findall(output) if len(p) >= 6]
    if len(paths) < 4:
        return None
    read = {"path": paths[len(paths) // 2]}
    return two_steps(traj, (tool, call, output), ("filesystem.read_text_file", read, "ok"))


def sessions(repo: Path, commits: int, shows: int) -> list[dict[str, object]]:
    records: list[dict[str, object]] = []
    reachable = int(_git(repo, "rev-list", "--first-parent", "--count", "HEAD")) - 1  # HEAD~N exists up to this N
    for back in range(0, min(commits, reachable - 25) + 1, 10):
        diff = _git(repo, "diff", f"HEAD~{back + 25}", f"HEAD~{back}")
        found = _session("git.git_diff", {"target": f"HEAD~{back + 25}"}, "Diff:\n" + diff, f"diff{back}")
        records += found or []
    taken = 0
    for sha in _git(repo, "log", "--format=%H", "-n", str(commits)).split():
        found = _session("git.git_show", {"revision": sha[:7]}, _git(repo, "show", sha), f"show{sha[:7]}")
        if found:
            records += found
            taken += 1
            if taken >= shows:
                break
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("out", help="where to write the corpus (.jsonl or .jsonl.gz)")
    parser.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]), help="a git repository")
    parser.add_argument("--commits", type=int, default=460, help="how far back to look")
    parser.add_argument("--shows", type=int, default=40, help="at most this many git_show sessions")
    args = parser.parse_args()
    write_sessions(args.out, sessions(Path(args.repo), args.commits, args.shows))


if __name__ == "__main__":
    main()
