"""Code-reading sessions for replay: a large source file read, then a call that names a function defined in it.

    python bench/code_reads.py OUT.jsonl.gz            # 40 sessions from this virtualenv's site-packages
    offload-mcp replay OUT.jsonl.gz --client claude-code --json

Each session is two records, as server-filesystem would give them: `filesystem.read_text_file` of a
real Python module of 30K-100K chars that describe.py judges to be source code (what the gate stubs
at the default large_threshold_chars), then `filesystem.search_files` for the name of the function
defined halfway down it (a name with an underscore, so replay counts it as a needed fact): what an
agent does next after reading a module, when it greps, calls or edits what it read. The files and the
names are picked deterministically (sorted paths, a seeded shuffle), so one virtualenv gives one corpus.

Measured (default config, --client claude-code, 40 sessions): before the stub indexed source code by its
definitions, all 40 reads were offloaded and 0 of 40 needed names were in view (40 behind a stub), tokens
cut 98.70%; with the outline (policy/index/text_records.py `_code_outline`) 40 of 40 are in view, tokens cut 92.43%.
On 40 modules whose first 200 lines had made describe.py say "prose / plain text" or "markdown text" (a
long docstring, a licence, `# ` comments), 25 of 40 are in view once such files count as source code by
their definitions (describe.py `_defines_throughout`), 0 before; tokens cut 98.73% -> 94.66%.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sysconfig
from pathlib import Path

from offload_mcp.policy.describe import describe_text

_DEF = re.compile(r"^[ \t]*(?:async\s+)?def\s+([A-Za-z_]\w*_\w+)", re.M)


def sessions(root: Path, count: int) -> list[dict[str, object]]:
    picked = []
    for path in sorted(root.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not 30_000 <= len(text) <= 100_000 or "looks like source code" not in describe_text(text):
            continue
        names = [n for n in _DEF.findall(text) if len(n) >= 6 and not n.startswith("__")]
        if len(names) >= 6:
            picked.append((path, text, names[len(names) // 2]))
    random.Random(7).shuffle(picked)
    records: list[dict[str, object]] = []
    for i, (path, text, name) in enumerate(picked[:count]):
        records += two_steps(
            f"code{i}",
            ("filesystem.read_text_file", {"path": str(path)}, text),
            ("filesystem.search_files", {"path": "/repo", "pattern": name}, "No matches found"),
        )
    return records


def two_steps(
    traj: str, read: tuple[str, dict[str, str], str], then: tuple[str, dict[str, str], str]
) -> list[dict[str, object]]:
    """One session's two records: a call (tool, arguments, output) that returns a large result, then the
    call that passes on a value read from it. The reading benches (code, git, doc) all write this shape."""
    return [
        {"tool": tool, "call": json.dumps(call), "output": output, "traj": traj, "step": step}
        for step, (tool, call, output) in enumerate((read, then), start=1)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("out", help="where to write the corpus (.jsonl or .jsonl.gz)")
    parser.add_argument("--root", default=sysconfig.get_paths()["purelib"], help="where to look for modules")
    parser.add_argument("--sessions", type=int, default=40)
    args = parser.parse_args()
    write_sessions(args.out, sessions(Path(args.root), args.sessions))


def write_sessions(path: str, records: list[dict[str, object]]) -> None:
    """One JSON record a line, gzipped when `path` ends in .gz; sessions are two records each."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")
    print(f"wrote {len(records) // 2} sessions to {path}")


if __name__ == "__main__":
    main()
