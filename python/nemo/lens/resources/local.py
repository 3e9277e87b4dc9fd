"""The host and process: host.name, process.pid and, when it can be told, host.gpu.count."""

import os
import shutil
import socket
import subprocess
from typing import Optional


def detect_local() -> dict:
    attributes = {"host.name": socket.gethostname(), "process.pid": os.getpid()}
    count = _gpu_count()
    if count is not None:
        attributes["host.gpu.count"] = count
    return attributes


def _gpu_count() -> Optional[int]:
    """CUDA_VISIBLE_DEVICES when set (empty: 0), else the GPUs nvidia-smi lists, else None."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return 0 if not visible.strip() else len(visible.split(","))
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        result = subprocess.run(["nvidia-smi", "--query-gpu=count", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    return len(lines) if lines else None
