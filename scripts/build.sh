#!/usr/bin/env bash
# Configures and builds lens with CMake + Ninja.
# usage: scripts/build.sh [BUILD_DIR] [extra cmake -D options...]
#   scripts/build.sh                                   -> build/ (RelWithDebInfo)
#   scripts/build.sh build-asan -DLENS_SANITIZE_ADDRESS=ON
#   scripts/build.sh build-tsan -DLENS_SANITIZE_THREAD=ON
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-build}
shift || true
[[ ${build_dir} = /* ]] || build_dir="${root}/${build_dir}"
# Every part, also in a build/ that scripts/demo.sh configured with tests, benchmarks and MPI off
# (-U: the Python package's default, pybind11 found or not, is looked up again).
cmake -S "${root}" -B "${build_dir}" -G Ninja -DLENS_BUILD_TESTS=ON -DLENS_BUILD_BENCHMARKS=ON \
  -DLENS_BUILD_MPI=ON -DLENS_BUILD_TORCH=ON -ULENS_BUILD_PYTHON "$@"
cmake --build "${build_dir}" --parallel "${LENS_BUILD_JOBS:-$(nproc)}"
