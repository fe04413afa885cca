"""Document-reading sessions for replay: a large markdown document read, then a call that uses a name or a
link from the middle of it.

    python bench/doc_reads.py OUT.jsonl.gz            # 40 sessions from node_modules, site-packages, /usr/share/doc
    offload-mcp replay OUT.jsonl.gz --client claude-code --json

Each session is two records. First `filesystem.read_text_file` of a real markdown document of 30K-250K
chars (README, API reference, changelog, guide) that describe.py judges markdown or prose: what a fetch
server, a docs server or a file read returns, and what the gate stubs at the default large_threshold_chars.
Then, in turns: `filesystem.search_files` for the API name (a token replay counts as a needed fact:
`http.request`, `fs_read`, `v2.3.0`) in the heading halfway down the document, as an agent looks up the
section it came for; or `fetch.fetch` of the URL halfway down its distinct links, as an agent follows a
link. Headings are found here by their own simple rule (`#` lines outside ``` fences), not by the index's.
Files and picks are deterministic (sorted paths, a seeded shuffle), so one checkout gives one corpus.

Measured (default config, --client claude-code, 40 sessions, 20 of each kind, on this project's machine):
all 40 reads are offloaded either way. Before the stub indexed a document by its headings, 20 of 40
needed values were in view (17 links, 3 names), tokens cut 93.52%; with the outline (policy/index/document.py
`_headings`, sharing the budget with the links) 36 of 40 (19 links, 17 names), tokens cut 90.99%; with
every heading by name when their titles do not fit (`_outline`'s last level: `2650 readable.forEach`)
37 of 40 (18 links, 19 names), 90.93%. Still behind a stub: `x509.subject`, one of crypto.md's 158
headings, which do not fit even by name beside its 85 URLs; and two links past the first ones of long
link lists, one of them crowded out by its document's 192 headings now listed in full.
"""

from __future__ import annotations

import argparse
import random
import re
import sysconfig
from pathlib import Path

from code_reads import two_steps, write_sessions
from offload_mcp.analysis.fidelity import fact_tokens
from offload_mcp.policy.describe import describe_text

ROOT = Path(__file__).resolve().parents[1]
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$")
_URL = re.compile(r"https?://[^\s<>()\[\]\"'`]+")
_DOCUMENT = ("looks like markdown text", "looks like prose / plain text")


def headings(text: str) -> list[str]:
    """The `#` heading lines outside ``` and ~~~ fences, in order."""
    found, fence = [], ""
    for line in text.split("\n"):
        mark = line.lstrip()[:3]
        if mark in ("```", "~~~"):
            fence = "" if fence == mark else (fence or mark)
        elif not fence and (m := _HEADING.match(line)):
            found.append(m.group(1))
    return found


def pick(text: str, want_link: bool) -> str | None:
    """The value the session's next call passes: a link from the middle of the distinct ones, or a fact
    token of a heading from the middle of those that hold one."""
    if want_link:
        links = list(dict.fromkeys(u.rstrip(".,;:!?*_") for u in _URL.findall(text)))
        return links[len(links) // 2] if len(links) >= 3 else None
    named = [tokens[0] for heading in headings(text) if (tokens := fact_tokens(heading))]
    return named[len(named) // 2] if len(named) >= 6 else None


def sessions(roots: list[Path], count: int) -> list[dict[str, object]]:
    docs = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.suffix.lower() not in (".md", ".markdown") or not path.is_file():
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if 30_000 <= len(text) <= 250_000 and any(kind in describe_text(text) for kind in _DOCUMENT):
                docs.append((path, text))
    random.Random(11).shuffle(docs)
    records: list[dict[str, object]] = []
    for path, text in docs:
        if len(records) // 2 >= count:
            break
        want_link = (len(records) // 2) % 2 == 1
        value = pick(text, want_link)
        if value is None:
            continue
        follow = (
            ("fetch.fetch", {"url": value}, "(page)")
            if want_link
            else ("filesystem.search_files", {"path": "/repo", "pattern": value}, "No matches found")
        )
        records += two_steps(
            f"doc{len(records) // 2}", ("filesystem.read_text_file", {"path": str(path)}, text), follow
        )
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("out", help="where to write the corpus (.jsonl or .jsonl.gz)")
    parser.add_argument(
        "--root",
        action="append",
        help="where to look for documents (default: this checkout's node_modules, site-packages and, where the"
        " machine has it, /usr/share/doc: Debian ships Node's API reference there)",
    )
    parser.add_argument("--sessions", type=int, default=40)
    args = parser.parse_args()
    roots = (
        [Path(r) for r in args.root]
        if args.root
        else [
            p
            for p in (ROOT / "node_modules", Path(sysconfig.get_paths()["purelib"]), Path("/usr/share/doc"))
            if p.is_dir()
        ]
    )
    write_sessions(args.out, sessions(roots, args.sessions))


if __name__ == "__main__":
    main()
