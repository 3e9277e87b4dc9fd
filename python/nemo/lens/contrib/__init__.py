"""Integration helpers: trace context across NCCL point-to-point transfers (nccl) and Ray remote
calls (ray). Neither imports its framework: they work on carriers and callables."""
