"""Inference metrics, as OpenTelemetry's GenAI conventions name them."""

from __future__ import annotations

from typing import Any, Optional

from ._cache import InstrumentCache

_cache = InstrumentCache(lambda meter: {
    "request_duration": meter.create_histogram(
        name="gen_ai.server.request.duration", unit="s",
        description="GenAI server request duration."),
    "token_usage": meter.create_histogram(
        name="gen_ai.client.token.usage", unit="{token}",
        description="Number of input and output tokens used."),
})


def record_inference_metrics(meter: Any, request_duration_s: Optional[float] = None,
                             model: Optional[str] = None, input_tokens: Optional[int] = None,
                             output_tokens: Optional[int] = None, provider_name: str = "nemo",
                             operation_name: str = "text_completion") -> None:
    """gen_ai.server.request.duration (s) and gen_ai.client.token.usage ({token}, one point per
    token type), with gen_ai.operation.name, gen_ai.provider.name and gen_ai.request.model."""
    instruments = _cache.get(meter, "inference")
    if instruments is None:
        return
    attributes = {"gen_ai.operation.name": operation_name, "gen_ai.provider.name": provider_name}
    if model:
        attributes["gen_ai.request.model"] = str(model)
    if request_duration_s is not None:
        instruments["request_duration"].record(request_duration_s, attributes=attributes)
    for token_type, count in (("input", input_tokens), ("output", output_tokens)):
        if count is not None:
            instruments["token_usage"].record(
                count, attributes={**attributes, "gen_ai.token.type": token_type})
