#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with Clang (ASan+UBSan) in build-fuzz and runs each for a
# fixed budget, then prints total executions and coverage per target (docs/reliability.md).
#   scripts/fuzz.sh [-t SECONDS] [--merge] [TARGET...]   (default: 60 s each, every target)
#     --merge           add what the run found to fuzz/corpus/<target>/, minimised: only inputs
#                       that cover new edges are copied (libFuzzer -set_cover_merge=1)
#   LENS_FUZZ_JOBS=N    build parallelism (default: nproc); LENS_FUZZ_BUILD_DIR (default build-fuzz)
# Each target runs in libFuzzer's fork mode, so that a finding does not end its budget: crashes,
# timeouts (-timeout=10) and out-of-memory inputs (-rss_limit_mb=2048) are kept under
# BUILD_DIR/findings/<target>/ and counted. The exit status is 1 when anything was found.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "${root}"

seconds=60
merge=0
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -t) seconds=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all_targets=$(sed -n '/^set(LENS_FUZZ_TARGETS/,/)/p' fuzz/CMakeLists.txt |
  sed -e 's/set(LENS_FUZZ_TARGETS//' -e 's/)//' | xargs)
if [[ ${#targets[@]} -eq 0 ]]; then
  read -r -a targets <<< "${all_targets}"
fi
build=${LENS_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${LENS_FUZZ_JOBS:-$(nproc)}

# The fuzzers need only liblens and the tool sources: no tests, benchmarks, MPI or libtorch.
# Warnings are left to the GCC builds (-Werror there): Clang's own warnings in lens code must not
# stop a fuzzing run, and the sanitizer flags carry a GCC-only -Wno-error= option.
mkdir -p "${build}"
CC=clang CXX=clang++ cmake -S . -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLENS_BUILD_FUZZERS=ON -DLENS_SANITIZE_ADDRESS=ON -DLENS_BUILD_TESTS=OFF \
  -DLENS_BUILD_BENCHMARKS=OFF -DLENS_BUILD_MPI=OFF -DLENS_BUILD_TORCH=OFF -DLENS_WERROR=OFF \
  -DCMAKE_C_FLAGS=-Wno-unknown-warning-option -DCMAKE_CXX_FLAGS=-Wno-unknown-warning-option \
  > "${build}/configure.log" 2>&1 || { cat "${build}/configure.log"; exit 1; }
ninja -C "${build}" -j "${jobs}" "${targets[@]/#/lens_fuzz_}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=${root}/tests/lsan.supp}

found=0
summary=()
for target in "${targets[@]}"; do
  corpus=${build}/corpus/${target}   # the run's working corpus: starts as the committed one
  findings=${build}/findings/${target}
  log=${build}/fuzz-${target}.log
  rm -rf "${corpus}" "${findings}"
  mkdir -p "${corpus}" "${findings}"
  cp fuzz/corpus/"${target}"/* "${corpus}"/
  echo "==> ${target}: ${seconds} s"
  start=$(date +%s)
  "${build}/bin/lens_fuzz_${target}" "${corpus}" -fork=1 -ignore_crashes=1 \
    -max_total_time="${seconds}" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -artifact_prefix="${findings}/" -print_final_stats=1 > "${log}" 2>&1 || true
  elapsed=$(( $(date +%s) - start ))
  # Fork mode's status lines: "#EXECS: cov: C ft: F corp: N exec/s: E oom/timeout/crash: a/b/c".
  last=$(grep -E '^#[0-9]+: cov:' "${log}" | tail -1 || true)
  execs=$(sed -E 's/^#([0-9]+):.*/\1/' <<< "${last}")
  cov=$(sed -E 's/.* cov: ([0-9]+).*/\1/' <<< "${last}")
  ft=$(sed -E 's/.* ft: ([0-9]+).*/\1/' <<< "${last}")
  issues=$(find "${findings}" -type f | wc -l)
  if [[ -z "${last}" ]]; then
    echo "fuzz.sh: ${target} printed no status line; see ${log}" >&2
    tail -20 "${log}" >&2
    found=1
    continue
  fi
  if [[ ${merge} -eq 1 ]]; then
    # Edges only (no hit counts), and a greedy set cover: a small corpus with the run's coverage.
    "${build}/bin/lens_fuzz_${target}" -set_cover_merge=1 -use_counters=0 -timeout=10 \
      -rss_limit_mb=2048 -max_len=8192 fuzz/corpus/"${target}" "${corpus}" >> "${log}" 2>&1
  fi
  files=$(find fuzz/corpus/"${target}" -type f | wc -l)
  summary+=("$(printf '%-22s %5s %10s %8s %6s %7s %7s %6s' "${target}" "${elapsed}" "${execs}" \
    "$(( execs / (elapsed > 0 ? elapsed : 1) ))" "${cov}" "${ft}" "${files}" "${issues}")")
  [[ ${issues} -eq 0 ]] || found=1
done

echo
printf '%-22s %5s %10s %8s %6s %7s %7s %6s\n' target s execs execs/s cov ft corpus found
printf '%s\n' "${summary[@]}"
if [[ ${found} -ne 0 ]]; then
  echo "fuzz.sh: findings under ${build}/findings/ (replay one with" \
    "build/bin/lens_fuzz_<target>_regression FILE, or the fuzzer with FILE)" >&2
  exit 1
fi
