"""The pre-warmed launcher stands in for `python SCRIPT` as its caller sees it (support/zygote.py).

The suite's servers start through it, so what the tests conclude about a server's exit code, output,
signals and death holds only if the launcher passes each of them through.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.processes import alive, run_unprivileged
from support.zygote import LAUNCHER, prewarmed

SCRIPT = """
import os, signal, sys, time
print(os.getpid(), flush=True)
mode = sys.argv[1]
if mode == "exit":
    sys.stdout.write(sys.stdin.read().upper())
    sys.stderr.write("to stderr\\n")
    sys.exit(int(sys.argv[2]))
if mode == "term":
    signal.signal(signal.SIGTERM, lambda *_: (print("stopping cleanly", flush=True), sys.exit(0)))
time.sleep(60)
"""


def _script(tmp_path: Path) -> str:
    path = tmp_path / "server.py"
    path.write_text(SCRIPT)
    return str(path)


def test_the_child_reads_the_callers_stdin_writes_its_stdout_and_stderr_and_exits_with_its_code(tmp_path: Path) -> None:
    done = subprocess.run(
        prewarmed([_script(tmp_path), "exit", "3"]), input="hello", capture_output=True, text=True, timeout=60
    )
    child_pid, out = done.stdout.split("\n", 1)
    assert (done.returncode, out, done.stderr) == (3, "HELLO", "to stderr\n")
    assert int(child_pid) != os.getpid()


def test_a_signal_sent_to_the_launcher_reaches_the_child_and_the_launcher_ends_as_it_did(tmp_path: Path) -> None:
    handled = subprocess.Popen(prewarmed([_script(tmp_path), "term"]), stdout=subprocess.PIPE, text=True)
    unhandled = subprocess.Popen(prewarmed([_script(tmp_path), "sleep"]), stdout=subprocess.PIPE, text=True)
    assert handled.stdout is not None and unhandled.stdout is not None
    handled.stdout.readline(), unhandled.stdout.readline()
    time.sleep(0.2)  # past the child's own handler's installation
    handled.send_signal(signal.SIGTERM)
    unhandled.send_signal(signal.SIGTERM)
    assert handled.wait(30) == 0 and handled.stdout.read() == "stopping cleanly\n"
    assert unhandled.wait(30) == -signal.SIGTERM


def test_killing_the_launcher_kills_the_child_as_killing_the_process_would(tmp_path: Path) -> None:
    proc = subprocess.Popen(prewarmed([_script(tmp_path), "sleep"]), stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    assert alive(child) and child != proc.pid  # forked by the zygote, not the launcher exec'ing Python
    proc.kill()
    assert proc.wait(30) == -signal.SIGKILL
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)
    assert proc.stdout.read() == ""  # the pipe ended with the child: nobody else held it


def test_without_a_zygote_the_launcher_runs_the_plain_command(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-S", LAUNCHER, str(tmp_path / "nobody-listens.sock"), _script(tmp_path), "exit", "4"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    out, _ = proc.communicate("x", timeout=60)
    pid, upper = out.split("\n", 1)
    assert (proc.returncode, upper, int(pid)) == (4, "X", proc.pid)  # the launcher became the script


def test_a_module_runs_as_python_dash_m_runs_it(tmp_path: Path) -> None:
    plain = subprocess.run([sys.executable, "-m", "json.tool"], input='{"b": [1]}', capture_output=True, text=True)
    warm = subprocess.run(prewarmed(["-m", "json.tool"]), input='{"b": [1]}', capture_output=True, text=True)
    assert (
        (warm.returncode, warm.stdout, warm.stderr)
        == (plain.returncode, plain.stdout, plain.stderr)
        == (
            0,
            '{\n    "b": [\n        1\n    ]\n}\n',
            "",
        )
    )


def test_a_launcher_without_our_privileges_runs_the_plain_command_never_a_fork_with_ours(tmp_path: Path) -> None:
    script = tmp_path / "whoami.py"
    script.write_text("import os; print(os.geteuid(), os.readlink('/proc/self/ns/user'))")
    ours = subprocess.run(prewarmed([str(script)]), capture_output=True, text=True, timeout=60).stdout.split()
    assert ours == [str(os.geteuid()), os.readlink("/proc/self/ns/user")]
    plain_euid, _ = run_unprivileged([sys.executable, str(script)]).stdout.split()
    theirs_euid, theirs_namespace = run_unprivileged(prewarmed([str(script)])).stdout.split()
    assert theirs_euid == plain_euid  # nobody, as the plain command runs in that namespace
    if os.geteuid() == 0:  # run_unprivileged made a user namespace: the script ran in it, not in a fork of ours
        assert theirs_namespace != ours[1] and theirs_euid != "0"
