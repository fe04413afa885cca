"""Run `SCRIPT ARGS...` in a child of the pre-warmed zygote listening on SOCKET (see support/zygote.py).

Usage: python -S zygote_launch.py SOCKET SCRIPT [ARGS...]

Stands in for `python SCRIPT ARGS...` as its caller sees it: the child gets this process's stdin,
stdout and stderr, signals sent here are passed on to it, and this process exits as the child did
(its code, or the signal that ended it). Without a zygote to talk to it becomes `python SCRIPT ARGS...`
itself, so a test never depends on the zygote being up. Standard library only: it starts with -S.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys

_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


_child: list[int] = []
_pending: list[int] = []


def _forward(signum: int, _frame: object) -> None:
    if not _child:
        _pending.append(signum)  # not forked yet: passed on as soon as it is
        return
    try:
        os.kill(_child[0], signum)
    except ProcessLookupError:
        pass


def _run_plainly(argv: list[str]) -> None:
    for signum in _FORWARDED:
        signal.signal(signum, signal.SIG_DFL)
    for early in _pending:
        os.kill(os.getpid(), early)  # what a plain process would have died of before it began
    os.execv(sys.executable, [sys.executable, *argv])


def main() -> None:
    for signum in _FORWARDED:
        signal.signal(signum, _forward)
    sock_path, argv = sys.argv[1], sys.argv[2:]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        conn.connect(sock_path)
        request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
        socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
        reply = conn.recv(4)
    except OSError:
        conn.close()
        _run_plainly(argv)
        return
    if len(reply) != 4:
        _run_plainly(argv)  # the zygote went away before it forked: nothing ran yet
        return
    _child.append(struct.unpack("i", reply)[0])
    for early in _pending:
        _forward(early, None)
    # The child alone holds the pipes now, so its caller sees end-of-file when the child ends.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    status_bytes = conn.recv(4)
    if len(status_bytes) != 4:
        sys.stderr.write("zygote_launch: the zygote went away; the child's exit status is unknown\n")
        os._exit(1)
    (status,) = struct.unpack("i", status_bytes)
    if os.WIFSIGNALED(status):
        ended_by = os.WTERMSIG(status)
        signal.signal(ended_by, signal.SIG_DFL)
        os.kill(os.getpid(), ended_by)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main()
