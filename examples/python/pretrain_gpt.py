#!/usr/bin/python3
"""Megatron-LM's `torchrun --nproc_per_node=N pretrain_gpt.py`, here: N data-parallel ranks (Gloo)
train a small GPT on the CPU, traced with nemo.lens (see gpt_training.py for the spans). One process
when started without a launcher.

    export MEGATRON_OTEL_ENABLED=1 OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317
    PYTHONPATH=build/python /usr/bin/python3 -m torch.distributed.run --nproc_per_node 2 \\
        -r 1 -t 1 --log_dir ./torchrun-logs examples/python/pretrain_gpt.py

(Debian's torchrun 1.13 needs -r 1 -t 1 --log_dir DIR to start.) `lens run --nproc-per-node 2 --
/usr/bin/python3 examples/python/pretrain_gpt.py` runs it with a collector and the report.
"""

import sys

from gpt_training import main

if __name__ == "__main__":
    sys.exit(main("pretrain_gpt.py", distributed=True))
