"""Where the process runs, as resource attributes: the host and process, SLURM, Kubernetes.
setup_telemetry's native core detects these itself (with more: GPU, torchrun, MPI; see
docs/resources.md); these functions give the same view to Python code."""

from .kubernetes import detect_kubernetes
from .local import detect_local
from .slurm import detect_slurm

__all__ = ["detect_kubernetes", "detect_local", "detect_resource", "detect_slurm"]


def detect_resource() -> dict:
    """detect_local, then detect_slurm, then detect_kubernetes, merged (later ones win)."""
    attributes: dict = {}
    attributes.update(detect_local())
    attributes.update(detect_slurm())
    attributes.update(detect_kubernetes())
    return attributes
