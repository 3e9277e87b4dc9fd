"""Reinforcement-learning metrics (rl.*)."""

from __future__ import annotations

from typing import Any, Optional

from ._cache import InstrumentCache

# (argument, metric name, unit, description) of the gauges.
_GAUGES = (
    ("reward_mean", "rl.reward.mean", "", "Mean reward across rollout batch."),
    ("kl_divergence", "rl.kl_divergence", "", "KL divergence between policy and reference."),
    ("policy_loss", "rl.policy_loss", "", "Policy gradient loss."),
    ("value_loss", "rl.value_loss", "", "Value function loss."),
    ("entropy", "rl.entropy", "", "Policy entropy."),
    ("response_length_mean", "rl.response_length.mean", "",
     "Mean generated response length (tokens)."),
    ("grad_norm", "rl.grad_norm", "", "Gradient norm of the policy update."),
    ("learning_rate", "rl.learning_rate", "", "Current optimizer learning rate."),
    ("throughput_tokens_per_sec", "rl.throughput.tokens_per_sec", "{token}/s",
     "Training throughput in tokens per second."),
)
_HISTOGRAMS = (
    ("generation_duration_ms", "rl.generation.duration_ms", "ms",
     "Duration of text generation in milliseconds."),
    ("rollout_duration_ms", "rl.rollout.duration_ms", "ms",
     "Duration of rollout collection in milliseconds."),
)


def _make(meter: Any) -> dict:
    instruments = {argument: meter.create_gauge(name=name, unit=unit, description=description)
                   for argument, name, unit, description in _GAUGES}
    instruments.update(
        {argument: meter.create_histogram(name=name, unit=unit, description=description)
         for argument, name, unit, description in _HISTOGRAMS})
    return instruments


_cache = InstrumentCache(_make)


def record_rl_metrics(meter: Any, reward_mean: Optional[float] = None,
                      kl_divergence: Optional[float] = None, policy_loss: Optional[float] = None,
                      value_loss: Optional[float] = None, entropy: Optional[float] = None,
                      response_length_mean: Optional[float] = None,
                      grad_norm: Optional[float] = None, learning_rate: Optional[float] = None,
                      throughput_tokens_per_sec: Optional[float] = None,
                      generation_duration_ms: Optional[float] = None,
                      rollout_duration_ms: Optional[float] = None) -> None:
    """Sets the rl.* gauges and records the two duration histograms; None values are skipped."""
    instruments = _cache.get(meter, "RL")
    if instruments is None:
        return
    values = locals()
    for argument, *_ in _GAUGES:
        if values[argument] is not None:
            instruments[argument].set(values[argument])
    for argument, *_ in _HISTOGRAMS:
        if values[argument] is not None:
            instruments[argument].record(values[argument])
