#!/usr/bin/env bash
# `lens report` at scale: generates synthetic runs in lens collect's format (lens_report_synth)
# and measures the report's wall time, CPU time (user + system) and peak RSS (/usr/bin/time -v),
# median of REPEAT runs; sizes in MB of 10^6 bytes for the input, MiB for the outputs.
#
#   bench/report_scale.sh [BUILD_DIR] [RANKS...]      (defaults: build, 256 1024)
#   REPEAT=3 ITERATIONS=500 WORK=/tmp/lens-report-scale
set -euo pipefail
build=${1:-build}
shift || true
ranks_list=("$@")
[ ${#ranks_list[@]} -eq 0 ] && ranks_list=(256 1024)
repeat=${REPEAT:-3}
iterations=${ITERATIONS:-500}
work=${WORK:-/tmp/lens-report-scale}
lens="$build/bin/lens"
synth="$build/bin/lens_report_synth"
for tool in "$lens" "$synth" /usr/bin/time; do
  [ -x "$tool" ] || { echo "report_scale.sh: missing $tool (build lens_cli and lens_report_synth)" >&2; exit 2; }
done
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for ranks in "${ranks_list[@]}"; do
  dir="$work/r${ranks}x${iterations}"
  if [ ! -s "$dir/traces.jsonl" ]; then
    "$synth" --ranks "$ranks" --iterations "$iterations" --out "$dir" >/dev/null
  fi
  input_mb=$(cat "$dir"/*.jsonl | wc -c | awk '{ printf "%.0f", $1 / 1e6 }')
  walls=() cpus=() rss=()
  for _ in $(seq "$repeat"); do
    "/usr/bin/time" -v "$lens" report "$dir" -o "$work/report.html" --perfetto "$work/trace.json" \
      >"$work/stdout.txt" 2>"$work/time.txt" || { cat "$work/time.txt" >&2; exit 1; }
    walls+=("$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0;
                for (i = 1; i <= n; ++i) s = s * 60 + p[i]; print s }' "$work/time.txt")")
    cpus+=("$(awk -F': ' '/User time|System time/ { s += $2 } END { printf "%.2f", s }' "$work/time.txt")")
    rss+=("$(awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$work/time.txt")")
  done
  html_mb=$(awk '{ printf "%.1f", $1 / 1048576 }' <<<"$(stat -c %s "$work/report.html")")
  trace_mb=$(awk '{ printf "%.1f", $1 / 1048576 }' <<<"$(stat -c %s "$work/trace.json")")
  printf '%s ranks x %s iterations (%s MB input): wall %s s, CPU %s s, peak RSS %s MB (median of %s; walls %s); HTML %s MB, Perfetto %s MB\n' \
    "$ranks" "$iterations" "$input_mb" "$(printf '%s\n' "${walls[@]}" | median)" \
    "$(printf '%s\n' "${cpus[@]}" | median)" "$(printf '%s\n' "${rss[@]}" | median)" \
    "$repeat" "${walls[*]}" "$html_mb" "$trace_mb"
done
