"""How long `--dist loadfile` keeps 4 workers busy in xdist's default file order and in the suite's own.

    python -m pytest -q -p no:cacheprovider --durations=0 > run.txt
    python -m pytest -q -p no:cacheprovider --collect-only > collected.txt
    python bench/suite_order.py run.txt collected.txt [--workers 4] [--json]

A model of the schedule, not a second run: each file costs the seconds the run measured for it
(setup + call + teardown of its tests), and a worker takes the next file in the queue when it runs
dry. xdist's default queue puts the files with the most tests first; the suite's own
(tests/support/file_order.py) puts the files of its table first, slowest first. Both orders are
modelled on the same measured seconds, so their ratio is taken on one machine at one time.
"""

from __future__ import annotations

import argparse
import heapq
import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from support.file_order import SECONDS, file_of  # noqa: E402

DURATION = re.compile(r"^\s*([\d.]+)s (?:setup|call|teardown)\s+(\S+?::)")


def seconds_per_file(durations: str) -> Counter[str]:
    """Setup + call + teardown seconds of each file, from pytest's `--durations=0` lines."""
    found: Counter[str] = Counter()
    for line in durations.splitlines():
        if match := DURATION.match(line):
            found[file_of(match.group(2))] += float(match.group(1))
    return found


def tests_per_file(collected: str) -> Counter[str]:
    """How many tests each file has, in collection order, from `--collect-only -q` lines."""
    return Counter(file_of(line.strip()) for line in collected.splitlines() if "::" in line)


def makespan(order: list[str], seconds: Counter[str], workers: int) -> float:
    """When the last worker finishes, each taking the next file of `order` as soon as it is free."""
    free_at = [0.0] * workers
    for name in order:
        heapq.heapreplace(free_at, free_at[0] + seconds[name])
    return max(free_at)


def compare(seconds: Counter[str], tests: Counter[str], workers: int) -> dict[str, float]:
    files = sorted(set(tests) | set(seconds))
    xdist_default = sorted(files, key=lambda name: -tests[name])
    slowest_first = sorted(files, key=lambda name: -SECONDS.get(name, 0.0))
    default_s = makespan(xdist_default, seconds, workers)
    ours_s = makespan(slowest_first, seconds, workers)
    return {
        "workers": workers,
        "files": len(files),
        "busy_s": round(sum(seconds.values()), 1),
        "even_split_s": round(sum(seconds.values()) / workers, 1),
        "xdist_default_s": round(default_s, 1),
        "slowest_first_s": round(ours_s, 1),
        "slowest_first_over_default": round(ours_s / default_s, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("durations", type=Path, help="pytest output with --durations=0")
    parser.add_argument("collected", type=Path, help="pytest --collect-only -q output (the tests of each file)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    seconds = seconds_per_file(args.durations.read_text(encoding="utf-8"))
    tests = tests_per_file(args.collected.read_text(encoding="utf-8"))
    if not seconds or not tests:
        parser.error("no --durations lines or no collected tests in the files given")
    figures = compare(seconds, tests, args.workers)
    if args.json:
        print(json.dumps(figures))
    else:
        print(
            f"{figures['files']} files on {figures['workers']} workers ({figures['busy_s']} s measured, "
            f"{figures['even_split_s']} s each if split evenly): xdist's default order {figures['xdist_default_s']} s, "
            f"slowest first {figures['slowest_first_s']} s, ratio {figures['slowest_first_over_default']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
