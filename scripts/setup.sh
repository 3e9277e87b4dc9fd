#!/usr/bin/env bash
# Installs the Debian packages lens-cpp needs. Idempotent: safe to run again; it only adds what
# is missing. Needs root (or sudo).
#   scripts/setup.sh          every package: build, test suite, sanitizers, benchmarks, Python, docs
#   scripts/setup.sh --demo   only what scripts/demo.sh builds and runs (liblens, `lens`, the
#                             libtorch example trainer): no test, benchmark, MPI, Python, Prometheus
#                             or browser packages
#
# opentelemetry-cpp 1.19 and the OTLP schema live in Debian's bookworm-backports suite,
# which apt does not list by default. We add that suite by reusing the mirror URI that
# apt is already configured with, so no host name is written here.
set -euo pipefail

if [[ ${EUID} -eq 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "setup: must run as root or with sudo available" >&2
  exit 1
fi

BACKPORTS_LIST=/etc/apt/sources.list.d/lens-bookworm-backports.sources

# Prints the URI of the first configured source that serves the plain 'bookworm' suite.
find_debian_mirror() {
  local f
  # deb822 files: blocks of 'Key: value' lines separated by blank lines.
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    awk '
      function flush() { if (has_suite && uri != "") { print uri; found = 1; exit } uri = ""; has_suite = 0 }
      /^[[:space:]]*$/ { flush(); next }
      /^URIs:/ { uri = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") has_suite = 1 }
      END { if (!found) flush() }
    ' "$f"
  done
  # One-line format: deb [options] URI SUITE COMPONENTS...
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f $f ]] || continue
    awk '$1 == "deb" { i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } if ($(i + 1) == "bookworm") { print $i; exit } }' "$f"
  done
}

add_backports() {
  if [[ -f ${BACKPORTS_LIST} ]]; then
    return 0
  fi
  if grep -rqsE '(^|[[:space:]])bookworm-backports([[:space:]]|$)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    return 0
  fi
  local mirror
  mirror=$(find_debian_mirror | head -n1)
  if [[ -z ${mirror} ]]; then
    echo "setup: no apt source for suite 'bookworm' found; add bookworm-backports to apt's sources by hand" >&2
    exit 1
  fi
  echo "setup: adding bookworm-backports from ${mirror}"
  printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "${mirror}" | "${SUDO[@]}" tee "${BACKPORTS_LIST}" >/dev/null
  "${SUDO[@]}" apt-get update
}

# What the demo's configure and build need (scripts/demo.sh: liblens, the `lens` tool, liblens_c10d
# and the example trainer, with LENS_BUILD_TESTS, LENS_BUILD_BENCHMARKS and LENS_BUILD_MPI off).
# protobuf-compiler-grpc: gRPC's CMake package names its plugins and fails without them.
DEMO_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libssl-dev zlib1g-dev libcurl4-openssl-dev
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  nlohmann-json3-dev libcpp-httplib-dev libsimdjson-dev prometheus-cpp-dev
  libtorch-dev libgloo-dev
)
DEMO_BACKPORTS_PACKAGES=(opentelemetry-cpp-dev libopentelemetry-proto-dev)
# The rest: the test suite (GoogleTest, MPI, the Python package and its tests, a real Prometheus,
# the report's browser check, the docs' commands), the benchmarks, the sanitizer and fuzz builds,
# the format and lint checks.
TEST_PACKAGES=(
  git clang clang-format clang-tidy libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev libspdlog-dev
  libopenmpi-dev openmpi-bin
  python3-torch pybind11-dev python3-pytest python3-venv python3-pip
  prometheus openssl chromium fonts-dejavu-core
  jq curl  # the docs' commands (DocCommands.*)
)
# python3-scikit-build-core: the build backend of `pip wheel` (pyproject.toml).
TEST_BACKPORTS_PACKAGES=(python3-scikit-build-core)

case "${1:-}" in
  --demo)
    PACKAGES=("${DEMO_PACKAGES[@]}")
    BACKPORTS_PACKAGES=("${DEMO_BACKPORTS_PACKAGES[@]}") ;;
  "")
    PACKAGES=("${DEMO_PACKAGES[@]}" "${TEST_PACKAGES[@]}")
    BACKPORTS_PACKAGES=("${DEMO_BACKPORTS_PACKAGES[@]}" "${TEST_BACKPORTS_PACKAGES[@]}") ;;
  *)
    echo "setup: unknown argument '$1'; accepted: --demo (the demo's packages only), or none (every package)" >&2
    exit 2 ;;
esac

missing_packages() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || echo "$p"
  done
}

add_backports
mapfile -t MISSING < <(missing_packages "${PACKAGES[@]}" "${BACKPORTS_PACKAGES[@]}")
if [[ ${#MISSING[@]} -gt 0 ]]; then
  export DEBIAN_FRONTEND=noninteractive
  # Refresh the lists when a package is unknown to them (fresh machine or new suite).
  if ! apt-cache show "${MISSING[@]}" >/dev/null 2>&1; then
    "${SUDO[@]}" apt-get update
  fi
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${PACKAGES[@]}"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    -t bookworm-backports "${BACKPORTS_PACKAGES[@]}"
fi
echo "setup: all packages present${1:+ ($1)}"
