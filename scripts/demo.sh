#!/usr/bin/env bash
# Installs what is needed, builds, and runs the main job. For now the main job is
# `lens config` on an example: the configuration that rank 3 of an 8-rank Megatron job
# would resolve with per-step spans, all ranks exporting and a 10% trace sampler.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "${root}"

bash scripts/setup.sh
bash scripts/build.sh build

echo "==> lens config --prefix MEGATRON_OTEL --rank 3 --world-size 8 --local-rank 3 --format text"
env MEGATRON_OTEL_ENABLED=1 \
    MEGATRON_OTEL_SPAN_GROUPS=per_step \
    MEGATRON_OTEL_RANK_STRATEGY=all_ranks \
    NEMO_LENS_RUN_ID=demo-run-1 \
    NEMO_LENS_USER_ID=team-alpha \
    OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317 \
    OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer%20not-a-real-token" \
    OTEL_TRACES_SAMPLER=parentbased_traceidratio \
    OTEL_TRACES_SAMPLER_ARG=0.1 \
    CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 \
    build/bin/lens config --prefix MEGATRON_OTEL --rank 3 --world-size 8 --local-rank 3 \
      --otel-service-name demo-train --format text
