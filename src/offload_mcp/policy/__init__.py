"""Pricing table, net-saving gate, and the result policy (one decision, one reason)."""

from .gate import OffloadGateDecision, OffloadGateInputs, evaluate_offload_gate
from .policy import Decision, PolicyInput, ResultPolicy
from .pricing import MODEL_PRICING, Price, normalize_model_name, resolve_price

__all__ = [
    "MODEL_PRICING",
    "Decision",
    "OffloadGateDecision",
    "OffloadGateInputs",
    "PolicyInput",
    "Price",
    "ResultPolicy",
    "evaluate_offload_gate",
    "normalize_model_name",
    "resolve_price",
]
