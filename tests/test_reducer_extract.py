"""extract: terminal noise goes, the original is stashed behind one marker."""

from offload_mcp.reducers.base import Acted, Declined, ReduceContext, marker, trailer
from offload_mcp.reducers.extract import Extract, clean, is_progress_line
from offload_mcp.reducers.settings import ExtractSettings
from offload_mcp.session import SessionMemory, cg_hash


def ctx(session=None):
    return ReduceContext(tool="bash", arguments={}, session=session or SessionMemory())


SEED_BEFORE = (
    "Cloning into 'repo'...\n...download progress...\nresolved 200 packages\n"
    + "warning: peer dependency unmet\n" * 15
    + "\n\n\nbuild complete in 4.2s\n"
)


def test_seed_example():
    out = Extract(ExtractSettings()).reduce(SEED_BEFORE, ctx())
    assert isinstance(out, Acted)
    h = cg_hash(SEED_BEFORE)
    assert out.text == (
        "Cloning into 'repo'...\n...download progress...\nresolved 200 packages\n"
        "warning: peer dependency unmet\n\nbuild complete in 4.2s\n"
        "[extract dropped 2 blank lines, 14 repeated lines]\n" + trailer(h)
    )
    assert out.stash == {h: SEED_BEFORE}
    assert trailer(h) == f"{marker(h)} [full output: call context_guru_expand]"


def test_ansi_and_carriage_return_churn():
    text = (
        "\x1b[1m\x1b[32mPASS\x1b[0m test_a\n"
        + "Downloading 10%\rDownloading 50%\rDownloading 100%\n"
        + "ok line\r\n" * 3
        + "x" * 200
    )
    cleaned = clean(text, 12)
    assert "\x1b" not in cleaned
    assert "PASS test_a\nDownloading 100%\n" in cleaned
    assert "ok line\r\n" in cleaned, "CRLF line endings are not churn"


def test_progress_lines_keep_final_state_and_spare_pytest_lines():
    bars = "".join(f" {p}%|{'█' * (p // 10)}{' ' * (10 - p // 10)}| {p}/100\n" for p in range(0, 101, 10))
    text = "start\n" + bars + "tests/test_x.py ..F.                    [ 45%]\ndone\n" + "z" * 300
    cleaned = clean(text, 12)
    assert cleaned.count("%|") == 1 and "100%|██████████|" in cleaned
    assert "tests/test_x.py ..F." in cleaned
    assert is_progress_line("⠋ Installing packages")
    assert not is_progress_line("Coverage: 85%")
    assert not is_progress_line("◐ spotter-y5l.4 [● P2] [task] - Add --plugin-dir flag"), (
        "a status icon, seen in the corpus"
    )


def test_repeated_blocks_up_to_max_lines():
    block = "\n".join(f"retry step {i}" for i in range(5))
    text = "head\n" + "\n".join([block] * 6) + "\ntail\n" + "q" * 300
    cleaned = clean(text, 12)
    assert cleaned.count("retry step 0") == 1
    big = "\n".join(f"line {i}" for i in range(13))
    text2 = "\n".join([big] * 3)
    assert clean(text2, 12).count("line 0") == 3, "blocks longer than max_block_lines are left alone"


def test_lone_repeated_brace_and_indented_statement_are_code():
    text = "def f():\n    x = {\n        }\n        }\n" + "    models.Unique(fields=['a']),\n" * 2 + "b" * 300
    assert clean(text, 12) == text


def test_recursion_traceback_block_collapses():
    frame = '  File "/x/matrices.py", line 214, in bareiss\n    return sign*bareiss(self._new(mat))'
    text = (
        "Traceback (most recent call last):\n"
        + "\n".join([frame] * 50)
        + "\nRecursionError: maximum recursion depth exceeded"
    )
    assert (
        clean(text, 12)
        == "Traceback (most recent call last):\n" + frame + "\nRecursionError: maximum recursion depth exceeded"
    )


def test_declines_with_named_reasons():
    e = Extract(ExtractSettings())
    assert e.reduce("short", ctx()) == Declined("below_min_size")
    plain = "\n".join(f"distinct line {i}" for i in range(40))
    assert e.reduce(plain, ctx()) == Declined("no_obvious_noise")
    assert e.reduce(plain + "\n" + marker("a" * 16), ctx()) == Declined("already_marked")
    small_noise = plain + "\n\n\n"
    assert e.reduce(small_noise, ctx()) == Declined("marker_no_win")
    session = SessionMemory(expanded={cg_hash(SEED_BEFORE)})
    assert e.reduce(SEED_BEFORE, ctx(session)) == Declined("kept_verbatim_after_expand")


def _plain_scan(lines, max_block):
    """The obvious 1..max_block scan; the chain-of-identical-lines version must accept the same blocks."""
    out, i, n = [], 0, len(lines)
    while i < n:
        for size in range(1, min(max_block, (n - i) // 2) + 1):
            block = lines[i : i + size]
            if lines[i + size : i + 2 * size] != block or not any(line.strip() for line in block):
                continue
            if size == 1 and (len(block[0].strip()) < 2 or block[0][:1].isspace()):
                continue
            j = i + 2 * size
            while lines[j : j + size] == block:
                j += size
            out.extend(block)
            i = j
            break
        else:
            out.append(lines[i])
            i += 1
    return out


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from offload_mcp.reducers.extract import _collapse_repeats  # noqa: E402


@given(st.lists(st.sampled_from(["a", "b", "cc", " x", "", "{", "dd"]), max_size=40), st.integers(1, 12))
def test_repeat_collapse_matches_the_plain_scan(lines, max_block):
    assert _collapse_repeats(lines, max_block) == _plain_scan(lines, max_block)


@given(
    st.lists(st.sampled_from(["a", "é", "→", "𝐭", "█", "⠋", "━", "\n"]), max_size=12).map("".join),
    st.sampled_from([0, 2_000]),
)
@settings(max_examples=200, deadline=None)
def test_the_noise_glyph_check_answers_as_one_in_test_per_glyph(chars: str, padding: int) -> None:
    """One character-class pass on four-byte text, an `in` test per glyph otherwise: the same answer."""
    from offload_mcp.reducers.extract import _NOISE_GLYPHS, _has_noise_glyph

    text = "x" * padding + chars
    assert _has_noise_glyph(text) == any(glyph in text for glyph in _NOISE_GLYPHS)


_LINES = [
    "download  45%|████▌     | 450/1000 [00:01<00:01]",
    "download  46%|████▋     | 460/1000 [00:01<00:01]",
    "[#####     ]  50%",
    "⠋ resolving packages",
    "    throw new Error('pass an array of schemas to z.tuple([ ... ])');",
    '    or "x: t [= ...]").',
    "const rest = a%|b;",
    "██████ a heading drawn with blocks, then words that are content",
    "plain content line",
    "",
]


@given(st.lists(st.sampled_from(_LINES), max_size=14))
@settings(max_examples=300, deadline=None)
def test_terminal_noise_is_reported_exactly_when_clean_drops_progress_lines(lines: list[str]) -> None:
    """has_terminal_noise reads only the lines holding a bar or spinner mark: the same answer as clean()'s
    whole pass, so the floor that lets a large result skip its reducers is taken only when it is valid."""
    from collections import Counter

    from offload_mcp.reducers.extract import has_terminal_noise

    text = "\n".join(lines)
    removed: Counter[str] = Counter()
    clean(text, 1, removed)
    assert has_terminal_noise(text) == (removed["progress lines"] > 0), removed


@given(st.lists(st.sampled_from(_LINES), max_size=14), st.sampled_from(["", "[", "%|", "x = [1, 2]  # 5%"]))
@settings(max_examples=300, deadline=None)
def test_without_progress_lines_drops_exactly_the_progress_lines(lines: list[str], content: str) -> None:
    """Reading only the lines with a mark leaves out what testing every line leaves out."""
    from offload_mcp.reducers.extract import without_progress_lines

    lines = [content, *lines, content]
    assert without_progress_lines(lines) == [line for line in lines if not is_progress_line(line)]


def test_marks_in_content_leave_a_large_source_file_to_be_offloaded_first(tmp_path) -> None:
    """`[ ... ]` and `%|` in code made the whole-text check say "noisy", so every reducer ran on a file
    that was offloaded anyway: zod's 160K types.ts 15.8 -> 4.7 ms, a 2.5 MB JS bundle 163 -> 26 ms."""
    import mcp_types as t

    from offload_mcp.config import OffloadSettings
    from offload_mcp.shaping import CallInfo, build_shaper

    code = "".join(
        f"export function check{i}(a, b) {{\n  if (!a) throw new Error('needs items for {i}');\n  return a + {i};\n}}\n\n"
        if i % 50
        else f"// z.tuple([ ... ]) takes a list, and a%|b is kept for {i}\n"
        for i in range(4_000)
    )
    shaper = build_shaper(OffloadSettings(), tmp_path / "l.db")
    _, rep = shaper.shape_with_report(
        CallInfo("s", "read", "read", {}), t.CallToolResult(content=[t.TextContent(text=code)])
    )
    assert rep.verdict == "offload" and {e.reason for e in rep.reducer_events} == {"offload_decided_first"}
    assert not is_progress_line("█" * 2000 + " 45%")  # a line that long is content
