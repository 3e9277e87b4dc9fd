#!/usr/bin/env bash
# Installs what is needed, builds, and runs the whole test suite: the normal build, then the
# AddressSanitizer+UndefinedBehaviorSanitizer build. This is exactly what CI runs (.ci/run).
#   LENS_TEST_SANITIZERS="asan"       (default) normal build, then ASan+UBSan
#   LENS_TEST_SANITIZERS="asan tsan"  also the ThreadSanitizer build
#   LENS_TEST_SANITIZERS="none"       normal build only
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "${root}"

bash scripts/setup.sh

run_suite() {
  local dir=$1
  shift
  echo "==> building ${dir} $*"
  bash scripts/build.sh "${dir}" -DLENS_BUILD_BENCHMARKS=ON "$@"
  echo "==> testing ${dir}"
  ctest --test-dir "${dir}" --output-on-failure --timeout 300 -j "$(nproc)"
}

run_suite build
for sanitizer in ${LENS_TEST_SANITIZERS:-asan}; do
  case "${sanitizer}" in
    asan)
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
        LSAN_OPTIONS="suppressions=${root}/tests/lsan.supp" \
        run_suite build-asan -DLENS_SANITIZE_ADDRESS=ON -DLENS_BUILD_BENCHMARKS=OFF ;;
    tsan)
      TSAN_OPTIONS="halt_on_error=1 suppressions=${root}/tests/tsan.supp" \
        run_suite build-tsan -DLENS_SANITIZE_THREAD=ON -DLENS_BUILD_BENCHMARKS=OFF ;;
    none) ;;
    *)
      echo "test.sh: unknown sanitizer '${sanitizer}' in LENS_TEST_SANITIZERS; accepted: asan, tsan, none" >&2
      exit 2 ;;
  esac
done
echo "==> all test suites passed"
