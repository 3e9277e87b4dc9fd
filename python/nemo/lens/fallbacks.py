"""No-op stand-ins with the signatures of the primitives, for code that must run where nemo.lens
is not importable::

    try:
        from nemo.lens.helpers import managed_span
        from nemo.lens.state import is_span_group_enabled
    except ImportError:
        from nemo.lens.fallbacks import managed_span, is_span_group_enabled
"""

from contextlib import contextmanager

__all__ = ["is_span_group_enabled", "managed_span", "safe_set_span_attributes", "span_cm",
           "trace_fn"]


def trace_fn(group, name, tracer=None):
    """A decorator that returns the function unchanged."""

    def decorator(func):
        return func

    return decorator


@contextmanager
def managed_span(group, name, tracer=None, **attributes):
    """Yields None."""
    yield None


@contextmanager
def span_cm(name, tracer=None, record_exception=True, **attributes):
    """Yields None."""
    yield None


def is_span_group_enabled(group):
    """False."""
    return False


def safe_set_span_attributes(span, attributes, redact_keys=None):
    """Does nothing."""
