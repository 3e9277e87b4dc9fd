"""Metric instruments of the NeMo ecosystem, recorded on a meter (handle.meter): inference
(GenAI conventions), reinforcement learning (rl.*), Gym (gym.*). Names, kinds and units are NeMo
Lens's; every recorder skips None values and never raises."""

from .gym import record_gym_metrics
from .inference import record_inference_metrics
from .rl import record_rl_metrics

__all__ = ["record_gym_metrics", "record_inference_metrics", "record_rl_metrics"]
