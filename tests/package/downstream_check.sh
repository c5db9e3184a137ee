#!/bin/sh
# The CMake package from a user's side (docs/design.md#packaging-and-versions):
# install this build into a fresh prefix, then configure, build and test
# examples/downstream against it alone. Its correct kernel must hold; its
# kernel with the planted mask bug must fail with a `reproduce:` line whose
# token replays the failure in one process; the installed moacert-simt-c++
# compiles against the installed headers and library; the CUDA example, built with
# the package's moacert_add_simt_plugin, must hold. A version the package is not
# compatible with must be refused by find_package.
#   downstream_check.sh BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR
set -eu
build=$1 source=$2 work=$3 generator=$4
prefix=$work/prefix
fail() {
  echo "downstream_check: $*" >&2
  exit 1
}
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || fail "install failed: $(cat "$work/install.log")"
for f in bin/moacert bin/moacert-plugin-worker include/moacert/plugin.h \
  include/moacert/plugin_params.h include/moacert/simt.h include/moacert/simt_host \
  lib/cmake/moacert/moacertConfig.cmake lib/cmake/moacert/moacertConfigVersion.cmake \
  lib/cmake/moacert/MoacertSimt.cmake lib/cmake/moacert/MoacertCertification.cmake; do
  [ -e "$prefix/$f" ] || fail "the install lacks $f"
done

# The installed moacert-simt-c++ finds the installed headers and library
# relative to itself (the prefix here is not the configure-time one).
"$prefix/bin/moacert-simt-c++" -shared -fPIC "$source/examples/plugins/cuda/attention_fwd.cu" \
  -o "$work/direct.so" >"$work/simt-c++.log" 2>&1 ||
  fail "the installed moacert-simt-c++ failed: $(cat "$work/simt-c++.log")"
simt_lib=$(ldd "$work/direct.so" | sed -n 's/.*libmoacert_simt[^ ]* => \([^ ]*\) .*/\1/p')
[ -n "$simt_lib" ] && [ "$(readlink -f "$simt_lib")" = "$(readlink -f "$prefix/lib/libmoacert_simt.so")" ] ||
  fail "direct.so does not load the installed libmoacert_simt: $(ldd "$work/direct.so")"

# The downstream project sees the installed prefix only (no moacert source
# or build folder on its paths).
cmake -S "$source/examples/downstream" -B "$work/build" -G "$generator" \
  -DCMAKE_PREFIX_PATH="$prefix" -DMYKERNELS_CASES=20 \
  -DMYKERNELS_CUDA_SOURCE="$source/examples/plugins/cuda/attention_fwd.cu" >"$work/configure.log" 2>&1 ||
  fail "configure failed: $(cat "$work/configure.log")"
cmake --build "$work/build" >"$work/build.log" 2>&1 || fail "build failed: $(cat "$work/build.log")"
rc=0
ctest --test-dir "$work/build" --output-on-failure >"$work/ctest.log" 2>&1 || rc=$?
cat "$work/ctest.log"
[ "$rc" -ne 0 ] || fail "ctest passed: the planted mask bug was not caught"
grep -Eq 'Test +#[0-9]+: mykernel\.attention\.f32 \.+ +Passed' "$work/ctest.log" ||
  fail "mykernel.attention.f32 did not pass"
grep -Eq 'Test +#[0-9]+: mykernel_cuda\.attention\.f32 \.+ +Passed' "$work/ctest.log" ||
  fail "mykernel_cuda.attention.f32 (moacert_add_simt_plugin from the install) did not pass"
grep -Eq 'Test +#[0-9]+: mykernel_mask_bug\.attention\.f32 \.+\*+Failed' "$work/ctest.log" ||
  fail "mykernel_mask_bug.attention.f32 did not fail"
line=$(sed -n 's/^reproduce: moacert \(reproduce mc1\..*\)$/\1/p' "$work/ctest.log")
[ -n "$line" ] || fail "the failing test printed no reproduce line"
[ "$(echo "$line" | wc -l)" -eq 1 ] || fail "more than one reproduce line: $line"
case "$line" in *--plugin*) ;; *) fail "the reproduce line does not name the plugin: $line" ;; esac

# The line replays as printed (from another folder), in one process, with
# the installed command.
rc=0
(cd / && eval "\"\$prefix/bin/moacert\" $line") >"$work/reproduce.log" 2>&1 || rc=$?
if [ "$rc" -ne 1 ] || ! grep -q FAILS "$work/reproduce.log"; then
  fail "reproduce exited $rc: $(cat "$work/reproduce.log")"
fi

# The certificate's version is the installed command's and the package's.
version=$("$prefix/bin/moacert" --version | sed -n 's/^moacert \([0-9.]*\) .*/\1/p')
grep -q "\"version\": \"$version\"" "$work/build/moacert/mykernel.attention.f32/certificate.json" ||
  fail "the certificate does not carry version $version"
grep -q "PACKAGE_VERSION \"$version\"" "$prefix/lib/cmake/moacert/moacertConfigVersion.cmake" ||
  fail "the package's version file is not $version"

# A major version ahead is refused by the version file.
mkdir -p "$work/too_new"
cat >"$work/too_new/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(too_new LANGUAGES NONE)
find_package(moacert 99.0 REQUIRED)
CMAKE
if cmake -S "$work/too_new" -B "$work/too_new/build" -DCMAKE_PREFIX_PATH="$prefix" \
  >"$work/too_new.log" 2>&1; then
  fail "find_package(moacert 99.0) was accepted by version $version"
fi
grep -q "not compatible\|not found\|version" "$work/too_new.log" || fail "$(cat "$work/too_new.log")"
echo "downstream_check: installed $version, mykernel holds, the mask bug fails and replays: $line"
