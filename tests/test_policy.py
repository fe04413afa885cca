"""Each branch of the result policy, asserted on its own, in the load-bearing order."""

import pytest

from offload_mcp.policy import OffloadGateDecision, PolicyInput, ResultPolicy
from offload_mcp.policy.settings import PolicySettings

BIG = 500_000  # above every threshold and the client limit


def policy(**kw):
    return ResultPolicy(PolicySettings(**kw))


def test_disabled_beats_everything():
    d = policy(enabled=False).decide(PolicyInput(BIG, multimodal=True, own_tool=True))
    assert (d.verdict, d.reason) == ("keep", "disabled")


def test_multimodal_beats_own_tool_and_size():
    d = policy().decide(PolicyInput(BIG, multimodal=True, own_tool=True))
    assert (d.verdict, d.reason) == ("keep", "multimodal")


def test_own_tool_output_is_never_offloaded_again():
    d = policy().decide(PolicyInput(BIG, own_tool=True))
    assert (d.verdict, d.reason) == ("keep", "own_tool")


def test_small_is_kept_at_and_below_threshold():
    assert policy().decide(PolicyInput(8_000)).reason == "small"
    assert policy().decide(PolicyInput(8_001)).reason == "below_large"


def test_below_large_prefilter():
    d = policy().decide(PolicyInput(39_999))  # most of what Claude Code alone shows whole stays whole (issue 38)
    assert (d.verdict, d.reason) == ("keep", "below_large") and d.gate is None


def test_over_client_limit_offloads_even_when_the_gate_declines():
    d = policy(model="unknown-model").decide(PolicyInput(100_001))
    assert (d.verdict, d.reason) == ("offload", "over_client_limit")
    assert d.gate is not None and not d.gate.fire  # terms still recorded


def test_over_client_limit_offloads_even_when_the_gate_raises():
    def broken(_):
        raise RuntimeError("boom")

    d = ResultPolicy(PolicySettings(), net_saving_gate=broken).decide(PolicyInput(100_001))
    assert (d.verdict, d.reason) == ("offload", "over_client_limit")


def test_client_limit_zero_disables_that_branch():
    d = policy(client_max_result_chars=0, model="unknown-model").decide(PolicyInput(BIG))
    assert (d.verdict, d.reason) == ("keep", "gate_declined")


def test_gate_fires_between_prefilter_and_client_limit():
    d = policy().decide(PolicyInput(80_000))
    assert (d.verdict, d.reason) == ("offload", "gate_fired")
    assert d.gate.fire and d.gate.net_saving_usd > 0
    assert d.terms()["net_saving_usd"] == d.gate.net_saving_usd


def test_gate_declines_for_unknown_model():
    d = policy(model="no-such-model").decide(PolicyInput(80_000))
    assert (d.verdict, d.reason) == ("keep", "gate_declined")
    assert "no pricing row" in d.explanation


def test_gate_that_raises_declines():
    def broken(_):
        raise ValueError("bad table")

    d = ResultPolicy(PolicySettings(), net_saving_gate=broken).decide(PolicyInput(80_000))
    assert (d.verdict, d.reason) == ("keep", "gate_error")
    assert "bad table" in d.explanation


def test_no_gate_declines():
    d = ResultPolicy(PolicySettings(), net_saving_gate=None).decide(PolicyInput(80_000))
    assert (d.verdict, d.reason) == ("keep", "gate_error")


def test_gate_receives_settings():
    seen = []

    def spy(inputs):
        seen.append(inputs)
        return OffloadGateDecision(True, 1.0, 1.0, 0.0, 0.0, "spy")

    ResultPolicy(PolicySettings(horizon=9, model="claude-haiku-4-5", prompt_caching=False), net_saving_gate=spy).decide(
        PolicyInput(80_000)
    )
    (inputs,) = seen
    assert (inputs.horizon, inputs.model_name, inputs.prompt_caching, inputs.output_tokens) == (
        9,
        "claude-haiku-4-5",
        False,
        20_000,
    )
    assert inputs.large_offload_threshold_tokens == 10_000


def test_client_limit_below_prefilter_is_a_config_error():
    with pytest.raises(ValueError, match="client_max_result_chars"):
        PolicySettings(client_max_result_chars=20_000)
    PolicySettings(client_max_result_chars=20_000, large_threshold_chars=20_000, small_threshold_chars=4_000)


def test_decision_as_dict_is_json_ready():
    import orjson

    d = policy().decide(PolicyInput(80_000)).as_dict()
    assert orjson.loads(orjson.dumps(d))["reason"] == "gate_fired"
