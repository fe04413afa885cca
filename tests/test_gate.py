"""The net-saving gate reproduces the seed's worked examples and prices the cached reality."""

import math

import pytest

from offload_mcp.policy import OffloadGateInputs, evaluate_offload_gate, resolve_price
from offload_mcp.policy.settings import PriceRow


def gate(tokens, **kw):
    kw.setdefault("horizon", 5)
    kw.setdefault("recall_probability", 0.5)
    kw.setdefault("model_name", "claude-opus-4-6")
    return evaluate_offload_gate(OffloadGateInputs(output_tokens=tokens, **kw))


def test_seed_example_a_321k_tokens_fires_with_about_8_dollars_uncached():
    d = gate(321_000)
    assert d.fire
    # seed formula by hand: T*in*H − (S*in*H + p*(Rin*in + Rout*out))
    expected = 321_000 * 5e-6 * 5 - (250 * 5e-6 * 5 + 0.5 * (2_000 * 5e-6 + 200 * 25e-6))
    assert math.isclose(d.net_saving_usd, expected)
    assert 7.9 < d.net_saving_usd < 8.1
    assert math.isclose(d.reprefill_saving_usd, 8.025)
    assert math.isclose(d.stub_carry_cost_usd, 0.00625)
    assert math.isclose(d.expected_recall_hop_cost_usd, 0.0075)
    assert "net=$8.01" in d.reason and "uncached" in d.reason


def test_seed_example_b_8k_result_does_not_fire():
    d = gate(8_000)
    assert not d.fire
    assert d.reason.startswith("below large_offload_threshold")
    assert d.net_saving_usd == 0.0


def test_unknown_model_never_fires():
    d = gate(10_000_000, model_name="mystery-model-9")
    assert not d.fire
    assert "no pricing row" in d.reason


def test_recall_hop_can_outweigh_a_small_saving_past_the_prefilter():
    d = gate(300, large_offload_threshold_tokens=0, horizon=1)
    assert not d.fire and d.net_saving_usd < 0


def test_cached_formula_writes_once_and_reads_each_later_turn():
    d = gate(321_000, prompt_caching=True)
    cw, cr, out = 6.25e-6, 0.5e-6, 25e-6
    carry = cw + cr * 4
    assert math.isclose(d.reprefill_saving_usd, 321_000 * carry)
    assert math.isclose(d.reprefill_saving_usd, 321_000 * cr * 5 + 321_000 * (cw - cr))
    assert math.isclose(d.stub_carry_cost_usd, 250 * carry)
    assert math.isclose(d.expected_recall_hop_cost_usd, 0.5 * (2_000 * cw + 200 * out))
    assert d.fire and d.net_saving_usd < gate(321_000).net_saving_usd
    assert "cached 5m" in d.reason


def test_cached_one_hour_ttl_uses_the_1h_write_rate():
    d = gate(100_000, prompt_caching=True, cache_ttl="1h", horizon=1)
    assert math.isclose(d.reprefill_saving_usd, 100_000 * 10e-6)


def test_zero_horizon_saves_nothing_and_never_fires():
    for caching in (False, True):
        d = gate(1_000_000, horizon=0, prompt_caching=caching)
        assert not d.fire and d.reprefill_saving_usd == 0.0


def test_pricing_override_adds_a_model():
    d = gate(321_000, model_name="my-model", pricing_overrides={"my-model": PriceRow(input=1.0, output=2.0)})
    assert d.fire and math.isclose(d.reprefill_saving_usd, 321_000 * 1e-6 * 5)


@pytest.mark.parametrize(
    "name,input_rate",
    [
        ("claude-opus-4-6", 5.0),
        ("claude-opus-4.6", 5.0),
        ("anthropic/claude-opus-4-5-20251101", 5.0),
        ("opus-4-8", 5.0),
        ("claude-opus-4-7", 5.0),
        ("claude-opus-4-1", 15.0),
        ("claude-sonnet-4-5-20250929", 3.0),
        ("sonnet", 3.0),
        ("claude-haiku-4-5", 1.0),
        ("gpt-4.1", 2.0),
        ("openai/gpt-5", 1.25),
        ("gemini-2.5-pro", 1.25),
    ],
)
def test_price_table_resolves_names_and_aliases(name, input_rate):
    assert resolve_price(name).input == input_rate


def test_opus_rates_are_the_issue_numbers():
    p = resolve_price("claude-opus-4-6")
    assert (p.input, p.output, p.cache_write_5m, p.cache_write_1h, p.cache_read) == (5.0, 25.0, 6.25, 10.0, 0.5)
    s, h = resolve_price("claude-sonnet-4-6"), resolve_price("claude-haiku-4-5")
    assert (s.input, s.output, h.input, h.output) == (3.0, 15.0, 1.0, 5.0)


def test_unknown_names_do_not_resolve_fuzzily():
    assert resolve_price("gpt") is None
    assert resolve_price("llama-4-70b") is None
    assert resolve_price("claude-3-opus") is None  # no family prefix: the old naming is not guessed


def test_an_unknown_model_of_a_known_family_is_priced_as_its_newest_row_and_the_gate_fires(caplog):
    """Issue 39: Claude Code's current model had no row, so the gate never fired for its users."""
    from offload_mcp.policy.pricing import price_for

    with caplog.at_level("WARNING", logger="offload_mcp.policy.pricing"):
        price, note = price_for("claude-opus-5-5")
        price_for("claude-opus-5-5")
        d = gate(200_000, model_name="claude-opus-5-5")
    assert price == resolve_price("claude-opus-4-8") and note is not None
    assert "priced as claude-opus-4-8, the newest known row of its family" in note
    said = [r.getMessage() for r in caplog.records if "claude-opus-5-5" in r.getMessage()]
    assert said == [note]  # once, however often it is priced
    assert d.fire, d.reason
    assert d.net_saving_usd == gate(200_000, model_name="claude-opus-4-8").net_saving_usd
    for model, row in (("claude-sonnet-5", "claude-sonnet-4-6"), ("claude-haiku-5", "claude-haiku-4-5")):
        assert price_for(model).price == resolve_price(row)
    assert price_for("gpt-5.5").price == resolve_price("gpt-5")
    assert price_for("gpt-5-mini").note is None  # its own row first


def test_a_model_of_no_known_family_has_no_price_and_says_so(caplog):
    from offload_mcp.policy.pricing import price_for

    with caplog.at_level("WARNING", logger="offload_mcp.policy.pricing"):
        price, note = price_for("mistral-huge-3")
    assert price is None and note is not None and "no known family: the net-saving gate will not fire" in note
    assert any("mistral-huge-3" in r.getMessage() for r in caplog.records)
    assert not gate(10_000_000, model_name="mistral-huge-3").fire


def test_a_config_row_overrides_the_family_price():
    from offload_mcp.policy.pricing import price_for

    own = {"claude-opus-5-5": PriceRow(input=7.0, output=30.0)}
    price, note = price_for("claude-opus-5-5", own)
    assert note is None and price is not None and (price.input, price.output) == (7.0, 30.0)
    family = {"claude-opus-4-8": PriceRow(input=4.0, output=20.0)}
    assert resolve_price("claude-opus-5-5", family).input == 4.0  # the family's row, as overridden
