"""Settings of the deterministic reducers (dedup, extract, smartcrush, collapse, linecap, tabulate)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ReducerName = Literal["dedup", "extract", "smartcrush", "tabulate", "collapse", "linecap"]


class DedupSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min_tokens: int = Field(
        default=50,
        ge=0,
        description="Only outputs above this many estimated tokens are deduplicated: a shorter repeat saves little, its copy being in context already (docs/configuration-notes.md).",
    )


class ExtractSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min_chars: int = Field(
        default=200, ge=0, description="Outputs shorter than this are left alone (`below_min_size`)."
    )
    max_block_lines: int = Field(
        default=12, ge=1, description="Longest repeated block (in lines) that is collapsed to one copy."
    )


class SmartcrushSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min_chars: int = Field(
        default=60_000,
        ge=0,
        description="Outputs shorter than this keep every item (`below_min_chars`): an agent reads records as data. 60,000 is where collapse would window the output; 0 crushes any size (docs/configuration-notes.md).",
    )
    min_items: int = Field(default=20, ge=2, description="Arrays shorter than this are left alone.")
    keep_first: int = Field(default=3, ge=0, description="Items kept from the start of the array.")
    keep_last: int = Field(default=2, ge=0, description="Items kept from the end of the array.")


class TabulateSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min_chars: int = Field(default=400, ge=0, description="Outputs shorter than this are left alone.")
    min_rows: int = Field(
        default=2,
        ge=2,
        description="Arrays of same-keyed objects with at least this many items become a columns+rows table.",
    )
    max_chars: int = Field(
        default=100_000,
        ge=0,
        description="Outputs at or above this are left alone (`above_max_chars`): the policy decides on their raw size and a stub's recall pages the original. 0 removes the ceiling (docs/configuration-notes.md).",
    )


class CollapseSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_tokens: int = Field(
        default=25_000,
        ge=0,
        description="Outputs above this many estimated tokens get a head/tail window. 25,000: a result Claude Code alone shows whole (<= 50,000 chars) is never windowed.",
    )
    head_lines: int = Field(default=20, ge=0, description="Lines kept from the head.")
    tail_lines: int = Field(default=20, ge=0, description="Lines kept from the tail.")


class LinecapSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_line_chars: int = Field(default=500, ge=0, description="Per-line cap; 0 disables the cap.")
    collapse_duplicate_lines: bool = Field(
        default=True, description="Collapse non-adjacent duplicate lines to one copy with (xN)."
    )
    min_size: int = Field(default=400, ge=0, description="Outputs shorter than this are left alone.")
    collapse_indented_duplicates: bool = Field(
        default=False,
        description="Also collapse repeated lines that start with indentation (off: in code reads a repeated `return None` is structure; on the shared corpus turning it on cuts 3.1 more points).",
    )
    cap_json_documents: bool = Field(
        default=False,
        description="Also cap long lines when the whole output is one JSON document (off: a cut record is invalid JSON and its fields are what agents act on; on the corpus +1.2 points).",
    )


def _default_pipeline() -> list[ReducerName]:
    return ["dedup", "extract", "smartcrush", "tabulate", "collapse", "linecap"]


class ReducerSettings(BaseModel):
    """The reducer pipeline: order matters (linecap last, as the seed measured)."""

    model_config = ConfigDict(extra="forbid")

    pipeline: list[ReducerName] = Field(default_factory=_default_pipeline, description="Reducers to run, in order.")
    dedup: DedupSettings = Field(default_factory=DedupSettings, description="dedup settings.")
    extract: ExtractSettings = Field(default_factory=ExtractSettings, description="extract settings.")
    smartcrush: SmartcrushSettings = Field(default_factory=SmartcrushSettings, description="smartcrush settings.")
    tabulate: TabulateSettings = Field(
        default_factory=TabulateSettings, description="tabulate settings (lossless JSON re-encoding)."
    )
    collapse: CollapseSettings = Field(default_factory=CollapseSettings, description="collapse settings.")
    linecap: LinecapSettings = Field(default_factory=LinecapSettings, description="linecap settings.")
