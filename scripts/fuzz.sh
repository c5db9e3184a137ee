#!/usr/bin/env bash
# Fuzzes the two parsers moacert exposes to untrusted text, with libFuzzer
# under AddressSanitizer (with LeakSanitizer) and UBSan (Debian's clang):
#
#   fuzz_case_json   case files (oracle/case_json.cpp)
#   fuzz_token       reproduction tokens (properties/token.cpp)
#
#   bash scripts/fuzz.sh [SECONDS] [BUILD_DIR]
#
# The targets, their sources and flags are CMake's (fuzz/CMakeLists.txt,
# -DMOACERT_FUZZ=ON): this script configures BUILD_DIR (default
# build-fuzz) with clang (CXX_FUZZ to choose another), builds them, and runs
# each from its seed corpus (fuzz/corpus/<target>/, never modified: new
# inputs go to a scratch copy) for SECONDS (default 60). Any crash, leak or
# sanitizer report fails the script, and the input that caused it is left in
# BUILD_DIR. .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
out=${2:-build-fuzz}
targets=(fuzz_case_json fuzz_token)

mkdir -p "$out"
echo "fuzz: configuring $out"
# Debug: assertions on; the targets add -O1 and the sanitizers themselves.
cmake -S . -B "$out" -G Ninja -DMOACERT_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_COMPILER="${CXX_FUZZ:-clang++}" > "$out/configure.log" 2>&1 ||
  { cat "$out/configure.log"; exit 1; }
echo "fuzz: building ${targets[*]}"
cmake --build "$out" --target "${targets[@]}"

status=0
for target in "${targets[@]}"; do
  corpus="$out/corpus_$target"
  rm -rf "$corpus"
  mkdir -p "$corpus"
  echo "fuzz: running $target for ${seconds} s"
  if ! (cd "$out" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "./fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -print_final_stats=1 "corpus_$target" "../fuzz/corpus/${target#fuzz_}" \
        > "$target.log" 2>&1); then
    echo "fuzz: $target FAILED (log: $out/$target.log)"
    tail -n 40 "$out/$target.log"
    status=1
  else
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$out/$target.log" |
      sed "s/^/fuzz: $target /"
  fi
done
exit $status
