"""A global in-flight byte budget for large downstream answers (`offload.downstream.max_inflight_result_bytes`).

Why: each answer is capped (`max_result_bytes`), but without a bound on them together a proxy's peak
RSS grows with the number of large answers in flight (docs/design.md, "Reading large answers"). So
every server of a proxy shares one budget, and N concurrent large answers cost O(budget), not O(N).

How it works: a transport charges an answer while it reads it (`Charge.grow`), in steps, once the answer
is over `CHARGE_FROM_BYTES`: each byte read is charged `MEMORY_PER_BYTE` bytes, what a read answer costs
until it is shaped (its bytes, the parsed message, the shaper's text and the ledger's copy). When the
budget is spent the transport stops reading (the server waits on a full socket or pipe) until another
answer's charge is released. The charge crosses the SDK as a token in the answer's `_meta` (the way
aside.py carries a structuredContent past it); `DownstreamServer.call_tool` claims it into the caller's
`Held`, released once the result is shaped and its body committed.

When an answer cannot be charged it is refused with a clear error for its call (`refusal`), and what it
had been charged is released at once: when its size alone passes the budget; when it waited
`max_inflight_wait_s`; and when every answer holding budget is waiting for more (each read part of its
answer, none can finish), the youngest of them, so the others go on. Never a crash, never a silent drop.

A charge handed to the SDK that no call claims (its caller was cancelled; an answer to something else) is
released by `SWEEP_AFTER_S`: the SDK hands an answer to its caller within a few turns of the loop.
/metrics shows what is held, the limit and the refusals (upstream/metrics.py).
When it is inert: answers under `CHARGE_FROM_BYTES` (most); a budget that is never spent.
"""

from __future__ import annotations

import logging
import secrets
from collections import OrderedDict, deque
from itertools import count

import anyio

logger = logging.getLogger(__name__)

CHARGE_FROM_BYTES = 256 * 1024
"""Answers smaller than this are not charged (most are; a 256 KiB answer costs a few ms and ~1 MB)."""
CHARGE_STEP_BYTES = 1024 * 1024
"""A growing answer is charged ahead in steps of this many bytes read, not on every chunk."""
MEMORY_PER_BYTE = 4
"""Bytes of memory one byte of a large answer costs while in flight, parsed, shaped and stored (measured
with bench/bench_inflight.py: docs/design.md, "Reading large answers")."""
SWEEP_AFTER_S = 10.0
RECENT_ANSWERS = 8
META_KEY = "offload-mcp/inflight"
SETTING = "offload.downstream.max_inflight_result_bytes"
WAIT_SETTING = "offload.downstream.max_inflight_wait_s"


class Refused(Exception):
    """An answer that could not be charged; the message says why and which setting governs it."""


class Charge:
    """What one answer holds of the budget."""

    def __init__(self, budget: InflightBudget, seq: int) -> None:
        self.budget = budget
        self.seq = seq
        self.bytes = 0
        """Budget held (memory estimate, not bytes read)."""
        self.read = 0
        """Bytes of the answer read so far."""
        self.waiting = False
        self.released = False
        self.handed_at: float | None = None
        self._refusal: str | None = None

    async def grow(self, read: int) -> None:
        """Charge an answer read up to `read` bytes; waits while the budget is spent. Raises `Refused`."""
        self.read = read
        if read < CHARGE_FROM_BYTES or read * MEMORY_PER_BYTE <= self.bytes:
            return
        budget = self.budget
        ahead = min(read + CHARGE_STEP_BYTES, budget.max_answer_bytes) * MEMORY_PER_BYTE
        if not self.bytes:
            ahead = max(ahead, budget.expected())  # admitted with room for what a large answer has been taking
        await budget._grant(self, read * MEMORY_PER_BYTE, max(min(ahead, budget.limit), self.bytes))

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.budget._release(self)


class InflightBudget:
    """One per proxy: the memory all large answers in flight may hold together."""

    def __init__(self, limit: int, wait_s: float, max_answer_bytes: int) -> None:
        self.limit = limit
        self.wait_s = wait_s
        self.max_answer_bytes = max_answer_bytes
        self.used = 0
        self.peak = 0
        self.refused = 0
        self._charges: dict[int, Charge] = {}
        self._handed: OrderedDict[str, Charge] = OrderedDict()
        self._prefix = secrets.token_hex(8) + "-"
        self._seq = count(1)
        self._changed = anyio.Event()
        self._recent: deque[int] = deque(maxlen=RECENT_ANSWERS)
        """What the last large answers were charged for their bytes read."""

    def charge(self) -> Charge:
        charge = Charge(self, next(self._seq))
        self._charges[charge.seq] = charge
        return charge

    # ---- across the SDK -------------------------------------------------------------------------

    def hand(self, charge: Charge) -> str:
        """A token for `charge`, put in the answer's `_meta` for its call to claim."""
        token = f"{self._prefix}{charge.seq}"
        charge.handed_at = anyio.current_time()
        self._handed[token] = charge
        return token

    def claim(self, token: object) -> Charge | None:
        """The charge a token stands for, once; None for any other value (a server's own)."""
        if not isinstance(token, str) or not token.startswith(self._prefix):
            return None
        return self._handed.pop(token, None)

    def owns(self, token: object) -> bool:
        return isinstance(token, str) and token.startswith(self._prefix)

    def _sweep(self) -> None:
        now = anyio.current_time()
        while self._handed:
            token, charge = next(iter(self._handed.items()))
            if charge.handed_at is not None and now - charge.handed_at < SWEEP_AFTER_S:
                return
            del self._handed[token]
            charge.release()

    # ---- granting -------------------------------------------------------------------------------

    def refusal(self, read: int, why: str) -> str:
        return (
            f"the answer was refused after {read:,} bytes: {why}. offload-mcp bounds the memory large answers "
            f"hold together ({SETTING}={self.limit:,}; each byte read is counted {MEMORY_PER_BYTE} times, what it "
            f"costs until it is shaped and stored). Repeat the call when fewer large results are in flight, or "
            f"raise {SETTING}"
        )

    async def _grant(self, charge: Charge, needed: int, wanted: int) -> None:
        """Charge at least `needed` (for the bytes read), up to `wanted` (room to read on) as the budget allows."""
        if charge._refusal is not None:
            raise Refused(charge._refusal)
        if needed > self.limit:
            self._refuse(charge, f"it alone needs more than the whole budget ({needed:,} bytes so far)")
        deadline = anyio.current_time() + self.wait_s
        charge.waiting = True
        try:
            while True:
                self._sweep()
                if charge._refusal is not None:
                    raise Refused(charge._refusal)
                # A new answer waits for room for all it is admitted with; one read in part, for what it read.
                least = needed if charge.bytes else max(needed, wanted)
                if self._first_in_line(charge) and self._room(charge) >= least:
                    granted = max(needed, min(wanted, self._room(charge)))
                    self.used += granted - charge.bytes
                    self.peak = max(self.peak, self.used)
                    charge.bytes = granted
                    return
                if self._break_deadlock(charge):
                    continue
                left = deadline - anyio.current_time()
                if left <= 0:
                    self._refuse(
                        charge,
                        f"the budget stayed spent by other large answers for {self.wait_s:g}s ({WAIT_SETTING})",
                    )
                changed = self._changed
                with anyio.move_on_after(min(left, 1.0)):
                    await changed.wait()
        finally:
            charge.waiting = False
            self._notify()

    def _room(self, charge: Charge) -> int:
        """What `charge` may hold: the budget less what the others hold."""
        return self.limit - (self.used - charge.bytes)

    def _first_in_line(self, charge: Charge) -> bool:
        # An answer read in part goes before a new one (what it holds is freed only once it is whole), and
        # among each, the older first.
        return not any(c.waiting and _before(c, charge) for c in self._charges.values())

    def _break_deadlock(self, charge: Charge) -> bool:
        """Called by a charge that waits: when it is the oldest holding budget and every holder waits for
        more, none can finish, so the youngest of them is refused (what it holds lets the others on).
        True when one was."""
        holders = [c for c in self._charges.values() if c.bytes > 0]
        if len(holders) < 2 or any(not c.waiting for c in holders) or min(holders, key=lambda c: c.seq) is not charge:
            return False
        youngest = max(holders, key=lambda c: c.seq)
        youngest._refusal = self.refusal(
            youngest.read, "the budget was spent by several large answers, each read in part and waiting for more"
        )
        self._give_back(youngest)
        return True

    def _refuse(self, charge: Charge, why: str) -> None:
        message = self.refusal(charge.read, why)
        charge._refusal = message
        self._give_back(charge)
        raise Refused(message)

    def _give_back(self, charge: Charge) -> None:
        self.refused += 1
        logger.warning("an answer was refused: %s", charge._refusal)
        self.used -= charge.bytes
        charge.bytes = 0
        self._notify()

    def expected(self) -> int:
        """What a new large answer is admitted with: the most any of the last few took, or the most one may
        take (`max_result_bytes`) before any is known. Admitting new answers with a few MB each, many at once,
        would let them all read in part and wait for more, and answers would be refused to break that
        deadlock."""
        return max(self._recent) if self._recent else self.max_answer_bytes * MEMORY_PER_BYTE

    def _release(self, charge: Charge) -> None:
        if charge.read >= CHARGE_FROM_BYTES and charge._refusal is None:
            self._recent.append(charge.read * MEMORY_PER_BYTE)
        self._charges.pop(charge.seq, None)
        self.used -= charge.bytes
        charge.bytes = 0
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()


def _before(first: Charge, second: Charge) -> bool:
    """Whether `first` is served before `second` when both wait."""
    if (first.bytes > 0) != (second.bytes > 0):
        return first.bytes > 0
    return first.seq < second.seq


class Held:
    """The charges one call claimed; released together once its result is shaped and committed."""

    def __init__(self) -> None:
        self.charges: list[Charge] = []

    def add(self, charge: Charge) -> None:
        self.charges.append(charge)

    def release(self) -> None:
        for charge in self.charges:
            charge.release()
        self.charges.clear()

    def __enter__(self) -> Held:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
