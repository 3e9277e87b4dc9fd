#!/usr/bin/python3
"""Megatron-LM's `python examples/run_simple_mcore_train_loop.py`, here: one process trains a small
GPT on the CPU, traced with nemo.lens (see gpt_training.py for the spans).

    export MEGATRON_OTEL_ENABLED=1 MEGATRON_OTEL_EXPORTER=console
    PYTHONPATH=build/python /usr/bin/python3 examples/python/run_simple_mcore_train_loop.py
"""

import sys

from gpt_training import main

if __name__ == "__main__":
    sys.exit(main("run_simple_mcore_train_loop.py", distributed=False))
