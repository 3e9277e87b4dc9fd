#!/usr/bin/env bash
# Installs what is needed, builds, and runs the whole test suite: the normal build, then the
# AddressSanitizer+UndefinedBehaviorSanitizer build of everything, then the ThreadSanitizer
# build of the unit tests (the concurrency tests: producer threads, exporters, shutdown, the
# native span path). This is exactly what CI runs (.ci/run).
#   LENS_TEST_SANITIZERS="asan tsan-unit"  (default) as above
#   LENS_TEST_SANITIZERS="asan tsan"       the ThreadSanitizer build of everything instead
#   LENS_TEST_SANITIZERS="none"            normal build only
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "${root}"

bash scripts/setup.sh

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

# Builds and tests one build directory; LENS_CTEST_ARGS adds ctest arguments (a test filter).
run_suite() {
  local dir=$1
  shift
  echo "==> building ${dir} $*"
  bash scripts/build.sh "${dir}" -DLENS_BUILD_BENCHMARKS=ON "$@"
  echo "==> testing ${dir} ${LENS_CTEST_ARGS:-}"
  # shellcheck disable=SC2086  # the arguments are meant to split
  ctest --test-dir "${dir}" --output-on-failure --timeout 300 -j "$(nproc)" ${LENS_CTEST_ARGS:-}
}

run_suite build
for sanitizer in ${LENS_TEST_SANITIZERS:-asan tsan-unit}; do
  case "${sanitizer}" in
    asan)
      (
        export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
        export LSAN_OPTIONS="suppressions=${root}/tests/lsan.supp"
        LENS_CTEST_ARGS="-E Fork" run_suite build-asan -DLENS_SANITIZE_ADDRESS=ON \
          -DLENS_BUILD_BENCHMARKS=OFF
        # GCC 12's AddressSanitizer runtime has no fork handlers (they came with LLVM 18): a child
        # forked while another thread is inside its allocator can hang there. The fork tests run
        # one at a time with up to 3 attempts each; the normal build runs them once.
        echo "==> testing build-asan (fork tests, up to 3 attempts each)"
        ctest --test-dir build-asan --output-on-failure --timeout 120 -R Fork \
          --repeat until-pass:3
      ) ;;
    tsan)
      rm -f "${root}"/build-tsan/tsan-report.*
      TSAN_OPTIONS=$(tsan_options build-tsan) \
        run_suite build-tsan -DLENS_SANITIZE_THREAD=ON -DLENS_BUILD_BENCHMARKS=OFF ||
        { show_tsan_reports build-tsan; exit 1; } ;;
    tsan-unit)
      # One process for the unit tests. fork() of a multi-threaded process is outside what GCC
      # 12's ThreadSanitizer supports, so the fork tests run in the other two builds only.
      echo "==> building build-tsan (unit tests) -DLENS_SANITIZE_THREAD=ON"
      cmake -S "${root}" -B "${root}/build-tsan" -G Ninja -DLENS_SANITIZE_THREAD=ON \
        -DLENS_BUILD_BENCHMARKS=OFF
      cmake --build "${root}/build-tsan" --parallel "${LENS_BUILD_JOBS:-$(nproc)}" \
        --target lens_unit_tests lens_cli  # the unit tests start bin/lens (lens collect)
      echo "==> testing build-tsan (unit tests, ThreadSanitizer)"
      rm -f "${root}"/build-tsan/tsan-report.*
      TSAN_OPTIONS=$(tsan_options build-tsan) \
        "${root}/build-tsan/bin/lens_unit_tests" --gtest_filter='-*Fork*' --gtest_brief=1 ||
        { show_tsan_reports build-tsan; exit 1; } ;;
    none) ;;
    *)
      echo "test.sh: unknown sanitizer '${sanitizer}' in LENS_TEST_SANITIZERS; accepted: asan, tsan, tsan-unit, none" >&2
      exit 2 ;;
  esac
done
echo "==> all test suites passed"
