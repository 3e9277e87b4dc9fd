#!/usr/bin/env bash
# Installs the lens build tree into a scratch prefix, then builds and runs a consumer against
# it twice: through find_package(lens) and through pkg-config.
# usage: run_consumer_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
build_dir=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "${work}"
mkdir -p "${work}"
prefix="${work}/prefix"

cmake --install "${build_dir}" --prefix "${prefix}" >/dev/null

sanitize_flags=()
case "${LENS_SANITIZE:-none}" in
  address) sanitize_flags=(-fsanitize=address,undefined) ;;
  thread) sanitize_flags=(-fsanitize=thread) ;;
esac
cxx_flags="${sanitize_flags[*]:-}"

expected="lens 0.1.0 service=megatron-lm groups=12 exporting=yes"

cmake -S "${here}" -B "${work}/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="${prefix}" \
  -DCMAKE_CXX_FLAGS="${cxx_flags}" -DCMAKE_EXE_LINKER_FLAGS="${cxx_flags}" >/dev/null
cmake --build "${work}/cmake-build" >/dev/null
got=$("${work}/cmake-build/consumer")
if [[ "${got}" != "${expected}" ]]; then
  echo "find_package consumer printed '${got}', expected '${expected}'" >&2
  exit 1
fi

got=$("${work}/cmake-build/instrumented")
if [[ "${got}" != "instrumented without setup: span recording no" ]]; then
  echo "lens::instrumentation consumer printed '${got}'" >&2
  exit 1
fi

pc_dir=$(dirname "$(find "${prefix}" -name lens.pc | head -n1)")
# shellcheck disable=SC2046
g++ -std=c++20 ${cxx_flags} "${here}/main.cpp" -o "${work}/pkgconfig-consumer" \
  $(PKG_CONFIG_PATH="${pc_dir}" pkg-config --cflags --libs lens-megatron) \
  -Wl,-rpath,"$(PKG_CONFIG_PATH="${pc_dir}" pkg-config --variable=libdir lens)"
got=$("${work}/pkgconfig-consumer")
if [[ "${got}" != "${expected}" ]]; then
  echo "pkg-config consumer printed '${got}', expected '${expected}'" >&2
  exit 1
fi
echo "consumer: find_package and pkg-config builds both printed '${expected}';"\
  "lens::instrumentation alone builds and runs"
