"""Config field descriptions stay reference lines: short, and any page they point to exists.

The why and the measurements behind a setting live in docs/configuration-notes.md (or the page a
description names), not in the line docs/configuration.md prints for it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pydantic

import offload_mcp

ROOT = Path(__file__).resolve().parents[1]
MAX_DESCRIPTION_CHARS = 200


def _config_fields() -> list[tuple[str, str]]:
    """(`module.Model.field`, description) for every field of every pydantic model in offload_mcp."""
    fields: list[tuple[str, str]] = []
    for info in pkgutil.walk_packages(offload_mcp.__path__, "offload_mcp."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if not (inspect.isclass(obj) and issubclass(obj, pydantic.BaseModel) and obj.__module__ == info.name):
                continue
            for field, field_info in obj.model_fields.items():
                fields.append((f"{info.name}.{name}.{field}", field_info.description or ""))
    return fields


def test_the_walk_finds_the_settings_models():
    names = {name for name, _ in _config_fields()}
    assert "offload_mcp.policy.settings.PolicySettings.horizon" in names
    assert "offload_mcp.store.settings.LedgerSettings.busy_timeout_s" in names


def test_no_field_description_exceeds_the_reference_line():
    too_long = {name: len(text) for name, text in _config_fields() if len(text) > MAX_DESCRIPTION_CHARS}
    assert too_long == {}, f"move the why into docs/configuration-notes.md: {too_long}"


def test_pages_named_by_descriptions_exist():
    named = {page for _, text in _config_fields() for page in re.findall(r"\bdocs/[\w./-]+\.md\b", text)}
    assert "docs/configuration-notes.md" in named
    assert sorted(page for page in named if not (ROOT / page).is_file()) == []


def test_every_key_pointing_to_the_notes_has_a_section_there():
    notes = (ROOT / "docs" / "configuration-notes.md").read_text(encoding="utf-8")
    reference = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    keys = re.findall(r"^\| `([^`]+)` \|[^\n]*docs/configuration-notes\.md", reference, flags=re.MULTILINE)
    assert keys, "no key of docs/configuration.md points to the notes"
    assert [key for key in keys if f"## `{key}`" not in notes] == []
