#!/usr/bin/env bash
# Installs what is needed, builds, and runs the main job: a 4-rank training run of the example
# trainer (data parallel over Gloo on this machine) under `lens run`, with per-step spans and
# every rank exporting to the collector embedded in `lens run`, ending with the run report.
# Extra arguments go to the trainer, e.g. scripts/demo.sh --slow-rank 2 --slow-ms 50.
# It installs and builds only what the demo runs: the demo's Debian packages (setup.sh --demo) and
# the two programs (`lens` and the trainer, with liblens and liblens_c10d) in build/, configured
# without tests, benchmarks, MPI and the Python package; scripts/test.sh adds the rest in the same
# build/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "${root}"

bash scripts/setup.sh --demo
# The compile flags of scripts/test.sh's normal build, so that its build reuses these objects.
cmake -S "${root}" -B "${root}/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g0 -DNDEBUG" \
  -DLENS_BUILD_TESTS=OFF -DLENS_BUILD_BENCHMARKS=OFF -DLENS_BUILD_FUZZERS=OFF -DLENS_BUILD_MPI=OFF \
  -DLENS_BUILD_PYTHON=OFF -DLENS_BUILD_TORCH=ON
cmake --build "${root}/build" --parallel "${LENS_BUILD_JOBS:-$(nproc)}" \
  --target lens_cli simple_train_loop

out=${LENS_DEMO_OUT:-lens-runs/demo}
rm -rf "${out}"
echo "==> build/bin/lens run --nproc-per-node 4 --out ${out} -- build/bin/simple_train_loop ..."
env MEGATRON_OTEL_SPAN_GROUPS=per_step \
    MEGATRON_OTEL_RANK_STRATEGY=all_ranks \
    build/bin/lens run --nproc-per-node 4 --out "${out}" -- \
      build/bin/simple_train_loop --train-iters 60 --log-interval 10 --eval-interval 30 \
      --eval-iters 2 --save "${out}/checkpoints" --save-interval 30 "$@"
echo "==> open ${out}/report.html in a browser; load ${out}/trace.json in https://ui.perfetto.dev"
