"""The SLURM job, from SLURM's variables; {} outside SLURM (no SLURM_JOB_ID)."""

import os

_VARIABLES = (
    ("SLURM_JOB_NAME", "slurm.job.name"),
    ("SLURM_NODELIST", "slurm.nodelist"),
    ("SLURM_NNODES", "slurm.nnodes"),
    ("SLURM_NTASKS", "slurm.ntasks"),
    ("SLURM_PARTITION", "slurm.partition"),
    ("SLURM_CLUSTER_NAME", "slurm.cluster.name"),
)


def detect_slurm() -> dict:
    job_id = os.environ.get("SLURM_JOB_ID")
    if not job_id:
        return {}
    attributes = {"slurm.job.id": job_id}
    for variable, key in _VARIABLES:
        value = os.environ.get(variable)
        if value:
            attributes[key] = value
    return attributes
