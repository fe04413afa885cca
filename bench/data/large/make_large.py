"""Make the large real outputs the token benchmark runs on (into bench/out/large/).

Each is produced by a real tool, deterministically where the tool allows:
- `repo/`: a git repository with 3,000 commits, written with `git fast-import`
  (seconds, not minutes); `mcp-server-git`'s `git_log max_count=3000` on it is
  the ~600K-char log result.
- `files/pytest_log.txt`: the `pytest -v -rA` log of the test suites that ship
  inside installed packages (jsonschema, referencing, regex), run for real.
- `files/pip_inspect.json`: `pip inspect` of this environment, a large JSON
  API-style listing (one object per installed distribution with its metadata).
- `files/vite_node.js`, `files/react_reconciler.js`: large real source files
  from node_modules, read through `server-filesystem`'s `read_text_file`.

Run: `python bench/data/large/make_large.py [--out bench/out/large] [--commits 3000]`.
Prints a JSON summary (name -> chars) on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

AREAS = [
    "parser",
    "cache",
    "scheduler",
    "http client",
    "CLI",
    "config loader",
    "ledger",
    "reducer",
    "docs",
    "tests",
    "CI",
    "metrics",
]
VERBS = ["Fix", "Add", "Refactor", "Speed up", "Document", "Simplify", "Harden", "Remove", "Rename", "Handle"]
DETAILS = [
    "off-by-one when the buffer is full",
    "timeouts on slow networks",
    "unicode paths on Windows",
    "a race between shutdown and flush",
    "empty input",
    "retries with exponential backoff",
    "the deprecated option",
    "error messages that named the wrong key",
    "memory growth under load",
    "a flaky assertion",
]
AUTHORS = [
    ("Ada Lovelace", "ada@example.org"),
    ("Grace Hopper", "grace@example.org"),
    ("Linus Torvalds", "linus@example.org"),
    ("Margaret Hamilton", "mh@example.org"),
    ("Ken Thompson", "ken@example.org"),
]


def fast_import_stream(commits: int) -> bytes:
    out: list[bytes] = []
    t0 = 1_700_000_000
    for i in range(commits):
        name, email = AUTHORS[i % len(AUTHORS)]
        area = AREAS[(i * 7) % len(AREAS)]
        subject = f"{VERBS[i % len(VERBS)]} {DETAILS[(i * 3) % len(DETAILS)]} in the {area} (#{1000 + i})"
        body = (
            ""
            if i % 3
            else f"\n\nThe {area} now checks its inputs before use.\nReported-by: {AUTHORS[(i + 2) % len(AUTHORS)][0]}\n"
        )
        message = (subject + body).encode()
        path = f"src/{area.replace(' ', '_')}/module_{i % 40}.py"
        content = f"# revision {i}\nVALUE = {i * 31 % 997}\n\ndef run():\n    return VALUE\n".encode()
        when = t0 + i * 3_600
        out.append(b"commit refs/heads/main\n")
        out.append(f"mark :{i + 1}\n".encode())
        out.append(f"author {name} <{email}> {when} +0000\n".encode())
        out.append(f"committer {name} <{email}> {when} +0000\n".encode())
        out.append(f"data {len(message)}\n".encode() + message + b"\n")
        if i:
            out.append(f"from :{i}\n".encode())
        out.append(f"M 100644 inline {path}\n".encode())
        out.append(f"data {len(content)}\n".encode() + content + b"\n")
    return b"".join(out)


def make_repo(target: Path, commits: int) -> None:
    if (target / ".git").exists():
        count = subprocess.run(
            ["git", "-C", str(target), "rev-list", "--count", "HEAD"], capture_output=True, text=True
        )
        if count.returncode == 0 and int(count.stdout.strip() or 0) == commits:
            return
        shutil.rmtree(target)
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(target)], check=True)
    subprocess.run(["git", "-C", str(target), "fast-import", "--quiet"], input=fast_import_stream(commits), check=True)
    subprocess.run(["git", "-C", str(target), "checkout", "-q", "-f", "main"], check=True)


def make_pytest_log(target: Path) -> None:
    site = Path(sysconfig.get_paths()["purelib"])
    suites = [site / "jsonschema" / "tests", site / "referencing" / "tests", site / "regex" / "tests"]
    suites = [s for s in suites if s.exists()]
    ignores = [
        f"--ignore={site / 'jsonschema/tests/test_jsonschema_test_suite.py'}",
        f"--ignore={site / 'referencing/tests/test_referencing_suite.py'}",
    ]
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-v",
        "-rA",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-o",
        "addopts=",
        "--rootdir",
        str(target.parent),
        *map(str, suites),
        *ignores,
    ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, cwd=target.parent, env={**os.environ, "PYTHONHASHSEED": "0"}
    )
    text = proc.stdout
    target.write_text(text, encoding="utf-8")


def make_pip_inspect(target: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "inspect", "--local"],
        capture_output=True,
        text=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    data = json.loads(proc.stdout)
    target.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")


SOURCE_FILES = {
    "vite_node.js": "node_modules/vite/dist/node/chunks/node.js",
    "react_reconciler.js": "node_modules/react-reconciler/cjs/react-reconciler.development.js",
}


def make_all(out: Path, commits: int = 3000, repo_only: bool = False) -> dict[str, int]:
    files = out / "files"
    files.mkdir(parents=True, exist_ok=True)
    make_repo(out / "repo", commits)
    if repo_only:
        return {}
    if not (files / "pytest_log.txt").exists():
        make_pytest_log(files / "pytest_log.txt")
    if not (files / "pip_inspect.json").exists():
        make_pip_inspect(files / "pip_inspect.json")
    for name, rel in SOURCE_FILES.items():
        src = ROOT / rel
        if src.exists() and not (files / name).exists():
            shutil.copyfile(src, files / name)
    return {p.name: len(p.read_text(encoding="utf-8")) for p in sorted(files.iterdir()) if p.is_file()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "large"))
    parser.add_argument("--commits", type=int, default=3000)
    args = parser.parse_args()
    print(json.dumps(make_all(Path(args.out), args.commits), indent=2))


if __name__ == "__main__":
    main()
