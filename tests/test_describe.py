"""describe_text's test-log detector, split into an anchored pattern and a guarded word search for speed:
every form the single alternation knew still counts, and look-alikes still do not."""

import pytest

from offload_mcp.policy.describe import _is_test_line, describe_text


@pytest.mark.parametrize(
    "line",
    [
        "tests/test_a.py::test_x PASSED",
        "job 7 FAILED after retry",
        "=== 12 passed, 1 skipped in 3.2s ===",
        "============================= test session starts ==============================",
        "ok 3 - parses the header",
        "not ok 4 - rejects garbage",
        "  ✓ renders the list (12 ms)",
        "  ✗ keeps the order",
        "Tests:       2 failed, 40 passed, 42 total",
        "--- FAIL: TestRoundTrip (0.01s)",
        "PASS src/app.test.ts",
        "FAIL\tgithub.com/x/y\t0.3s",
    ],
)
def test_each_test_log_form_counts(line: str) -> None:
    assert _is_test_line(line)


@pytest.mark.parametrize(
    "line",
    ["request PASSEDX to the queue", "the passed value in x", "okay 3", "Testing: 3", "PASSING grade", "xFAILED", ""],
)
def test_look_alikes_do_not(line: str) -> None:
    assert not _is_test_line(line)


def test_a_pytest_run_reads_as_a_test_log() -> None:
    run = "\n".join(f"tests/test_m.py::test_{i} {'PASSED' if i % 5 else 'FAILED'}" for i in range(40))
    assert describe_text(run) == "40 lines; looks like a test log"


def test_share_above_is_the_plain_share_decided_early():
    """describe/index sample 200 lines per text kind; share_above gives the plain share's answer for every
    threshold they use, and stops reading once the answer is certain."""
    import random

    from offload_mcp.policy.describe import share_above

    rng = random.Random(7)
    for _ in range(3000):
        lines = [rng.choice("ab") for _ in range(rng.randrange(1, 40))]
        threshold = rng.choice([0.0, 0.02, 0.05, 0.1, 0.15, 0.5, 0.7, 0.8, 1.0, rng.random()])
        plain = sum(1 for ln in lines if ln == "a") / len(lines) > threshold
        assert share_above(lines, lambda ln: ln == "a", threshold) is plain, (lines, threshold)
    read: list[str] = []
    assert not share_above(["b"] * 200, lambda ln: read.append(ln) or ln == "a", 0.7)
    assert len(read) == 60  # 141 of 200 needed: out of reach after 60 misses
