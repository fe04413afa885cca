"""One economics module: the gate, stats, replay and the demo give the same dollars for the same inputs."""

from __future__ import annotations

import pytest

from offload_mcp.analysis.replay import Record, _dollars
from offload_mcp.analysis.stats import aggregate
from offload_mcp.commands.demo import carry_figures
from offload_mcp.config import OffloadSettings
from offload_mcp.policy.economics import Rates, offload_terms
from offload_mcp.policy.gate import OffloadGateInputs, evaluate_offload_gate
from offload_mcp.policy.pricing import resolve_price
from offload_mcp.policy.settings import PolicySettings
from offload_mcp.record import ShapeVerdict
from support.decision_records import decision_record, decision_row

MODEL = "claude-opus-4-6"  # input $5/M, output $25/M, cache write 5m $6.25/M, 1h $10/M, cache read $0.50/M
T, S, H = 100_000, 250, 4  # result tokens, stub tokens, requests that carry it (the one that reads it + 3 calls)


def _policy(caching: bool, ttl: str = "5m") -> PolicySettings:
    return PolicySettings(model=MODEL, prompt_caching=caching, cache_ttl=ttl, stub_tokens=S)  # type: ignore[arg-type]


def _stats_events(*, verdict: ShapeVerdict, chars_in: int, chars_out: int, observe: bool) -> list[dict[str, object]]:
    """One result in session "s", then H - 1 more calls that save nothing (so H requests carry the result)."""
    mode = "observe" if observe else "enforce"
    first = decision_record(
        "s",
        "srv",
        "big",
        verdict,
        "gate_fired",
        chars_in,
        chars_out,
        mode=mode,
        would_chars_out=chars_out if observe else None,
    )
    later = [decision_record("s", "srv", "small", "keep", "small", 10, mode=mode) for _ in range(H - 1)]
    return [decision_row(record, id_=i, at=float(i)) for i, record in enumerate([first, *later], 1)]


@pytest.mark.parametrize(("caching", "ttl"), [(True, "5m"), (True, "1h"), (False, "5m")])
def test_gate_stats_and_replay_price_a_would_be_offload_the_same(caching: bool, ttl: str) -> None:
    policy = _policy(caching, ttl)
    cpt = policy.chars_per_token
    gate = evaluate_offload_gate(
        OffloadGateInputs(
            output_tokens=T,
            horizon=H,
            recall_probability=policy.recall_probability,
            model_name=MODEL,
            stub_tokens=S,
            recall_input_tokens=policy.recall_input_tokens,
            recall_output_tokens=policy.recall_output_tokens,
            prompt_caching=caching,
            cache_ttl=policy.cache_ttl,
        )
    )

    # stats: an observe-mode offload (nothing recalled yet, so the prior recall is charged), followed by H - 1 calls
    events = _stats_events(verdict="offload", chars_in=int(T * cpt), chars_out=int(S * cpt), observe=True)
    stats_usd = aggregate(events, policy).totals.would_usd_saved

    # replay: the same result as step 0 of an H-step trajectory, offloaded to an S-token stub
    records = [Record(i + 1, "tool", "", "x", "traj", i) for i in range(H)]
    settings = OffloadSettings(policy=policy)
    replay = _dollars(records, [T - S] + [0.0] * (H - 1), [True] + [False] * (H - 1), settings, (MODEL,), hops=1)[MODEL]

    assert gate.fire
    assert stats_usd == pytest.approx(gate.net_saving_usd, rel=1e-12)
    # replay rounds to 4 decimals; `saved_usd_prior` charges the prior recall the gate assumes, `saved_usd`
    # the hops it measured (one here), each priced as the gate prices a recall hop
    assert replay["saved_usd_prior"] == pytest.approx(gate.net_saving_usd, abs=5e-5)
    hop = gate.expected_recall_hop_cost_usd / policy.recall_probability
    assert replay["saved_usd"] == pytest.approx(gate.reprefill_saving_usd - gate.stub_carry_cost_usd - hop, abs=5e-5)


@pytest.mark.parametrize("caching", [True, False])
def test_stats_and_the_demo_price_a_reduction_the_same(caching: bool) -> None:
    policy = _policy(caching)
    saved_tokens = 25_000
    events = _stats_events(verdict="reduce", chars_in=40_000 * 4, chars_out=15_000 * 4, observe=False)
    stats_usd = aggregate(events, policy).totals.usd_saved

    per_turn = carry_figures(saved_tokens, MODEL, policy)
    assert per_turn is not None
    first, later = per_turn
    assert stats_usd == pytest.approx(first + later * (H - 1), rel=1e-12)


def test_the_horizon_and_each_term_by_hand() -> None:
    price = resolve_price(MODEL)
    assert price is not None
    cached = Rates.of(price, prompt_caching=True, cache_ttl="5m")
    plain = Rates.of(price, prompt_caching=False)
    # carry(x, H) = x * (new_content + carried * (H - 1)); 0 when nothing follows
    assert cached.carry(1_000_000, 3) == pytest.approx(6.25 + 2 * 0.50)
    assert plain.carry(1_000_000, 3) == pytest.approx(3 * 5.0)
    assert cached.carry(1_000_000, 0) == plain.carry(1_000_000, 0) == 0.0
    # recall_hop(R_in, R_out) = R_in * new_content + R_out * output: a recalled slice is new content
    assert cached.recall_hop(2_000, 200) == pytest.approx(2_000 * 6.25e-6 + 200 * 25e-6)
    assert plain.recall_hop(2_000, 200) == pytest.approx(2_000 * 5e-6 + 200 * 25e-6)
    terms = offload_terms(
        cached,
        output_tokens=T,
        stub_tokens=S,
        horizon=H,
        recall_probability=0.5,
        recall_input_tokens=2_000,
        recall_output_tokens=200,
    )
    assert terms.net == pytest.approx(cached.carry(T - S, H) - 0.5 * cached.recall_hop(2_000, 200))


def test_the_last_result_of_a_conversation_is_carried_by_the_request_that_reads_it() -> None:
    """A token saved on a trajectory's last output is worth one cache write (the request that read it), never $0:
    pricing it at zero made a session of one big result "keep tokens out" yet cost its recall prior."""
    records = [Record(1, "tool", "", "x" * 4_000, "t", 0), Record(2, "tool", "", "x" * 4_000, "t", 1)]
    settings = OffloadSettings(policy=_policy(True))
    dollars = _dollars(records, [0.0, 1_000.0], [False, False], settings, (MODEL,))[MODEL]
    assert dollars["saved_usd"] == pytest.approx(1_000 * 6.25e-6, abs=5e-5)
    dollars = _dollars(records, [1_000.0, 0.0], [False, False], settings, (MODEL,))[MODEL]
    assert dollars["saved_usd"] == pytest.approx(1_000 * (6.25e-6 + 0.5e-6), abs=5e-5)
    # stats: the same, from the ledger
    events = _stats_events(verdict="offload", chars_in=400_000, chars_out=1_000, observe=False)[:1]
    assert aggregate(events, _policy(True)).totals.usd_saved == pytest.approx(99_750 * 6.25e-6)
