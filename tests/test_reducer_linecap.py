"""linecap: per-line cap with the never-truncate allow-list, non-adjacent duplicate collapse."""

from offload_mcp.reducers.base import Acted, Declined, ReduceContext, SessionMemory, cg_hash, marker, trailer
from offload_mcp.reducers.linecap import Linecap, never_truncate
from offload_mcp.reducers.settings import LinecapSettings


def ctx(session=None):
    return ReduceContext(tool="t", arguments={}, session=session or SessionMemory())


def run(text, **kw):
    return Linecap(LinecapSettings(**kw)).reduce(text, ctx())


BANNER = "banner one\nbanner two\nbanner three\n"
SUMMARY = "\nsummary one\nsummary two\nsummary three"


def test_seed_example_duplicates_then_cap():
    body = "".join(f"resolving dependency graph for module\nstep {i} done\n" for i in range(1, 31))
    blob = "m" * 2000
    text = BANNER + body + blob + SUMMARY
    out = run(text)
    assert isinstance(out, Acted)
    lines = out.text.split("\n")
    assert lines[3] == "resolving dependency graph for module (x30)"
    assert lines[4] == "step 1 done" and lines[5] == "step 2 done"
    assert out.text.count("resolving dependency") == 1
    assert "m" * 497 + "...[+1503 chars]" in lines
    assert lines[-1] == trailer(cg_hash(text))
    assert out.stash == {cg_hash(text): text}


def test_xn_is_rendered_after_the_cap():
    long_dup = "k" * 900
    text = BANNER + f"{long_dup}\nother line here\n{long_dup}\n" + SUMMARY
    out = run(text)
    assert isinstance(out, Acted)
    assert "k" * 497 + "...[+403 chars] (x2)" in out.text.split("\n")


def test_allow_list_lines_survive_the_cap():
    keep = [
        "src/app/module.py " + "a" * 600,
        "/usr/lib/python3/site.py:120:5 " + "b" * 600,
        '  File "x.py", line 3, in f ' + "c" * 600,
        "ValueError: bad " + "d" * 600,
        "FAILED tests/test_a.py::test_b " + "e" * 600,
        "process exited with code 1 " + "f" * 600,
        "@@ -1,3 +1,4 @@ " + "g" * 600,
        "see https://example.com/" + "h" * 600,
    ]
    for line in keep:
        assert never_truncate(line), line
    assert not never_truncate("x" * 600)


def test_guards():
    # first/last 3 lines are never collapsed
    dup = "same line repeated"
    text = f"{dup}\nb\nc\n" + "".join(f"line {i}\n" for i in range(60)) + f"{dup}\n" + "x\ny\nz"
    assert run(text) == Declined("no_long_or_repeated_lines")
    # lines differing only in a source location stay two findings
    findings = "".join(f"src/a.py:{i}: W123 unused import\nfiller {i}\n" for i in range(30))
    assert run(BANNER + findings + SUMMARY) == Declined("no_long_or_repeated_lines")
    # short and indented lines are not collapsed
    code = BANNER + "".join(f"def f{i}():\n    return None\n" for i in range(40)) + "ok\n" * 1 + SUMMARY
    assert run(code) == Declined("no_long_or_repeated_lines")


def test_declines_with_named_reasons():
    assert run("short") == Declined("below_min_size")
    diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,3 @@\n" + "+ return nil\n context\n" * 40
    assert run(diff) == Declined("diff_shaped")
    assert run('{"a": "' + "x" * 1000 + '"}') == Declined("json_document")
    assert run("x" * 600 + marker("d" * 16)) == Declined("already_marked")
    long_once = "p" * 520 + "\n" + "q" * 10
    assert run(long_once) == Declined("marker_no_win")
    text = BANNER + "n" * 3000 + SUMMARY
    assert Linecap(LinecapSettings()).reduce(text, ctx(SessionMemory(expanded={cg_hash(text)}))) == Declined(
        "kept_verbatim_after_expand"
    )
    assert run(text, max_line_chars=0, collapse_duplicate_lines=False) == Declined("no_long_or_repeated_lines")


def test_opt_ins_restore_the_seed_behaviour():
    code = BANNER + "".join(f"def f{i}():\n    return None\n" for i in range(40)) + SUMMARY
    out = run(code, collapse_indented_duplicates=True)
    assert isinstance(out, Acted) and "    return None (x40)" in out.text.split("\n")
    record = '{"a": "' + "x" * 1000 + '"}'
    capped = run(record, cap_json_documents=True)
    assert isinstance(capped, Acted) and capped.stash == {cg_hash(record): record}
