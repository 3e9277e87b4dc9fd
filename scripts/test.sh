#!/usr/bin/env bash
# Installs what is needed, builds, and runs the whole test suite: the normal build, then the
# AddressSanitizer+UndefinedBehaviorSanitizer build of everything, then the ThreadSanitizer
# build of the unit tests (the concurrency tests: producer threads, exporters, shutdown, the
# native span path). This is exactly what CI runs (.ci/run). At the end (also when a stage fails)
# it prints the wall time of every stage: CI's budget is 50 minutes (docs/development.md).
#   LENS_TEST_SANITIZERS="asan tsan-unit"  (default) as above
#   LENS_TEST_SANITIZERS="asan tsan"       the ThreadSanitizer build of everything instead
#   LENS_TEST_SANITIZERS="none"            normal build only
# Every stage runs every time (a stage skipped for time would hide what it tests: the suite is
# made to fit the budget instead).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "${root}"
jobs=${LENS_BUILD_JOBS:-$(nproc)}

# --- stage timing -------------------------------------------------------------------------------
stage_names=()
stage_seconds=()
stage_name=""
stage_started=0
script_started=${SECONDS}
begin_stage() {
  end_stage
  stage_name=$1
  stage_started=${SECONDS}
  echo "==> ${stage_name}"
}
end_stage() {
  if [[ -n ${stage_name} ]]; then
    stage_names+=("${stage_name}")
    stage_seconds+=($((SECONDS - stage_started)))
    stage_name=""
  fi
}
print_stage_times() {
  local status=$? i
  local failed=${stage_name}
  end_stage
  echo "==> wall time per stage (s)"
  for i in "${!stage_names[@]}"; do
    printf '    %-58s %6d%s\n' "${stage_names[i]}" "${stage_seconds[i]}" \
      "$([[ ${stage_names[i]} == "${failed}" && ${status} -ne 0 ]] && echo '  FAILED')"
  done
  printf '    %-58s %6d  (CI budget 3000)\n' "total" $((SECONDS - script_started))
}
trap print_stage_times EXIT

# --- helpers ------------------------------------------------------------------------------------
# ThreadSanitizer writes its reports to files (some tests capture stderr, and a report written
# there would be lost with only exit status 66 to show); they are printed when a run fails.
tsan_options() {
  echo "halt_on_error=1 suppressions=${root}/tests/tsan.supp log_path=${root}/$1/tsan-report"
}
show_tsan_reports() {
  local reports=("${root}/$1"/tsan-report.*)
  if [[ -e "${reports[0]}" ]]; then
    echo "==> ThreadSanitizer reports in $1:" >&2
    cat "${reports[@]}" >&2
  fi
}

# configure DIR [cmake options...]
configure() {
  local dir=$1
  shift
  cmake -S "${root}" -B "${root}/${dir}" -G Ninja "$@" >/dev/null
}

# build DIR [targets...]
build() {
  local dir=$1
  shift
  local targets=()
  (($# == 0)) || targets=(--target "$@")
  cmake --build "${root}/${dir}" --parallel "${jobs}" "${targets[@]}"
}

# ctest_dir DIR [ctest arguments...]
ctest_dir() {
  local dir=$1
  shift
  ctest --test-dir "${root}/${dir}" --output-on-failure --timeout 300 -j "${jobs}" "$@"
}

# The unit tests (label `unit`) of one build, but for the fork tests, as two shards of the binary
# at once: one process each, as ctest -j2 keeps two busy, without ctest's process per test (under
# ASan that start-up cost more than the tests: 442 s for the whole ctest run, 31 s for the unit
# tests sharded). A shard that hangs is ended after 15 minutes.
run_unit_shards() {
  local binary="${root}/$1/bin/lens_unit_tests" shards=2 i status=0
  local pids=()
  for ((i = 0; i < shards; i++)); do
    GTEST_TOTAL_SHARDS=${shards} GTEST_SHARD_INDEX=${i} timeout -k 10 900 \
      "${binary}" --gtest_filter='-*Fork*' --gtest_brief=1 >"${binary}.shard${i}.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    if ! wait "${pids[i]}"; then
      status=1
    fi
    echo "--- shard ${i} of ${shards}"
    cat "${binary}.shard${i}.log"
  done
  return "${status}"
}

# --- stages -------------------------------------------------------------------------------------
begin_stage "setup (Debian packages)"
bash scripts/setup.sh

# The normal build keeps -O2 (the library as users build it) without debug info: full debug
# info doubles the compile time of the test files, line tables alone cost ~15%, and nothing here
# reads them (the sanitizer builds, whose reports need stack traces, keep line tables).
# Every part on, also in a build/ that scripts/demo.sh configured (tests, benchmarks and MPI off,
# and the Python package off where pybind11 was not installed yet: -U lets it look again).
begin_stage "build: normal"
configure build -DLENS_BUILD_TESTS=ON -DLENS_BUILD_BENCHMARKS=ON -DLENS_BUILD_MPI=ON \
  -DLENS_BUILD_TORCH=ON -ULENS_BUILD_PYTHON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g0 -DNDEBUG"
build build
normal_build_seconds=$((SECONDS - stage_started))
begin_stage "test: normal (ctest, all but the unit tests)"
ctest_dir build -LE unit
begin_stage "test: normal unit tests (2 shards)"
run_unit_shards build
begin_stage "test: normal unit fork tests (ctest)"
ctest_dir build -L unit -R Fork

for sanitizer in ${LENS_TEST_SANITIZERS:-asan tsan-unit}; do
  case "${sanitizer}" in
    asan)
      export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
      export LSAN_OPTIONS="suppressions=${root}/tests/lsan.supp"
      begin_stage "build: ASan+UBSan"
      configure build-asan -DLENS_SANITIZE_ADDRESS=ON -DLENS_BUILD_BENCHMARKS=OFF
      build build-asan
      # Every test but the unit tests (the next stage) and the fork tests (the one after), the
      # fault matrix (label fault) and the real-Prometheus scrape (label prometheus) included.
      begin_stage "test: ASan+UBSan (ctest, all but unit and fork tests)"
      ctest_dir build-asan -LE unit -E Fork
      begin_stage "test: ASan+UBSan unit tests (2 shards)"
      run_unit_shards build-asan
      # GCC 12's AddressSanitizer runtime has no fork handlers (they came with LLVM 18): a child
      # forked while another thread is inside its allocator can hang there. The fork tests run
      # one at a time with up to 3 attempts each; the normal build runs them once.
      begin_stage "test: ASan+UBSan fork tests (serial)"
      ctest --test-dir "${root}/build-asan" --output-on-failure --timeout 120 -R Fork \
        --repeat until-pass:3
      unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS ;;
    tsan)
      begin_stage "build: TSan"
      configure build-tsan -DLENS_SANITIZE_THREAD=ON -DLENS_BUILD_BENCHMARKS=OFF
      build build-tsan
      begin_stage "test: TSan (ctest)"
      rm -f "${root}"/build-tsan/tsan-report.*
      TSAN_OPTIONS=$(tsan_options build-tsan) ctest_dir build-tsan ||
        { show_tsan_reports build-tsan; exit 1; } ;;
    tsan-unit)
      # The unit tests only. fork() of a multi-threaded process is outside what GCC 12's
      # ThreadSanitizer supports, so the fork tests run in the other two builds only.
      begin_stage "build: TSan (unit tests, lens)"
      configure build-tsan -DLENS_SANITIZE_THREAD=ON -DLENS_BUILD_BENCHMARKS=OFF
      build build-tsan lens_unit_tests lens_cli  # the unit tests start bin/lens (lens collect)
      begin_stage "test: TSan unit tests (2 shards)"
      rm -f "${root}"/build-tsan/tsan-report.*
      TSAN_OPTIONS=$(tsan_options build-tsan) run_unit_shards build-tsan ||
        { show_tsan_reports build-tsan; exit 1; } ;;
    none) ;;
    *)
      echo "test.sh: unknown sanitizer '${sanitizer}' in LENS_TEST_SANITIZERS; accepted: asan, tsan, tsan-unit, none" >&2
      exit 2 ;;
  esac
done
end_stage
echo "==> all test suites passed"
