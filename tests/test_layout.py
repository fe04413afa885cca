"""docs/design.md's layout names every top-level module and package of src/offload_mcp, and nothing else.

The layout is the map a newcomer reads first: a package added without its line, or a line left for a
module that moved, makes the map lie. Entries are the left column of the fenced block under
`## Layout` (`name/` or `name.py`, several joined by commas), ended by two spaces; lines indented
further continue the description above them.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "offload_mcp"
DESIGN = ROOT / "docs" / "design.md"


def layout_block(text: str) -> str:
    found = re.search(r"^## Layout\n\n```\n(.*?)```\n", text, flags=re.S | re.M)
    assert found is not None, "docs/design.md has no `## Layout` section with one fenced block"
    return found.group(1)


def named_in_layout(block: str) -> set[str]:
    """The entries of the block's left column (its first line is the package's own path)."""
    named: set[str] = set()
    for line in block.splitlines()[1:]:
        if line.startswith("  ") and not line.startswith("   "):
            named.update(part.strip() for part in line[2:].split("  ")[0].split(","))
    return named


def present_in_source(root: Path) -> set[str]:
    """Top-level modules (`name.py`) and packages (`name/`, with an `__init__.py`) of the package."""
    return {
        path.name + ("/" if path.is_dir() else "")
        for path in root.iterdir()
        if (path.is_dir() and (path / "__init__.py").exists()) or (path.suffix == ".py" and path.name != "__init__.py")
    }


def test_layout_reads_the_left_column_only():
    block = (
        "src/offload_mcp/\n"
        "  a/                 the first, naming b.py in its text\n"
        "  c.py, d/  two on one line\n"
        "                     a continuation naming e/\n"
    )
    assert named_in_layout(block) == {"a/", "c.py", "d/"}


def test_layout_names_every_top_level_module_and_package():
    named = named_in_layout(layout_block(DESIGN.read_text(encoding="utf-8")))
    missing = present_in_source(SOURCE) - named
    assert not missing, f"docs/design.md's layout does not name {sorted(missing)}"


def test_layout_names_nothing_that_is_not_there():
    named = named_in_layout(layout_block(DESIGN.read_text(encoding="utf-8")))
    stale = named - present_in_source(SOURCE)
    assert not stale, f"docs/design.md's layout names {sorted(stale)}, which src/offload_mcp does not have"
