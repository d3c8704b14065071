#!/bin/sh
# Install the build tree into a temporary prefix and build a program that calls into every
# installed library against it twice: with pkg-config and with find_package(hako) (every
# installed lib/libhako_<x>.so must be in hako.pc's Libs and be the CMake target hako::hako_<x>).
# Then check that every program of the build tree's bin/ and the viewer's page are installed,
# under the prefix and with DESTDIR (as `make install DESTDIR=...` does).
# Usage: check_install.sh <build-dir> <source-dir>
set -eu
build=$1
src=$2
tmp=$(mktemp -d /tmp/hako-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"

libs=""
for so in "$tmp"/prefix/lib/libhako_*.so; do
  name=${so##*/lib}
  libs="$libs ${name%.so}"
done
[ -n "$libs" ] || { echo "no lib/libhako_*.so installed"; exit 1; }
for want in hako_base hako_registry hako_core hako_endpoint hako_bridge hako_conductor hako_rd; do
  case " $libs " in *" $want "*) ;; *) echo "missing after install: lib/lib$want.so"; exit 1 ;; esac
done

export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
pc_libs=$(pkg-config --libs hako)
for l in $libs; do
  case " $pc_libs " in *" -l$l "*) ;; *) echo "hako.pc: lib$l.so is installed, -l$l is not in Libs"; exit 1 ;; esac
done
# shellcheck disable=SC2046
cc "$src/consumer.c" $(pkg-config --cflags --libs hako) -Wl,-rpath,"$tmp/prefix/lib" -o "$tmp/consumer-pc"
"$tmp/consumer-pc" | grep -qx "hako consumer ok"

targets=""
for l in $libs; do
  targets="$targets hako::$l"
done
mkdir "$tmp/cm"
cat > "$tmp/cm/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(hako REQUIRED)
add_executable(consumer "$src/consumer.c")
target_link_libraries(consumer$targets)
EOT
cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" > "$tmp/cm.log"
cmake --build "$tmp/cm/build" > "$tmp/cm-build.log"
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/cm/build/consumer" | grep -qx "hako consumer ok"

for f in bin/hako-cmd bin/hako-launch bin/hako-rd bin/hako-msggen bin/hako-bridge bin/hako-endpoint \
         bin/hako-conductor bin/hako-viewer \
         share/hako/viewer/www/index.html share/hako/viewer/www/app.js share/hako/viewer/www/style.css \
         include/hako_asset.h include/hako_conductor.h include/hako_simevent.h include/hako/hako_asset.h \
         include/hako_capi.h include/hako/hako_capi.h include/hako_asset_service.h include/hako/hako_asset_service.h \
         include/hako/domain.h include/hako/rd.h include/hako/endpoint.h include/hako/frame.h include/hako/pdu.h include/hako/msg.h \
         include/hako/conductor.h include/hako/bridge.h \
         include/hako/msgs/geometry_msgs/Twist.h include/hako/msgs/hako_msgs/SimTime.h \
         include/hako/limits.h bin/hello-check share/hako/samples/hello/launch.json \
         lib/pkgconfig/hako.pc lib/cmake/hako/hakoConfig.cmake share/hako/msg/std_msgs/Header.msg; do
  test -e "$tmp/prefix/$f" || { echo "missing after install: $f"; exit 1; }
done

# Every program of the build tree's bin/ (the page beside hako-viewer, www/, is installed to
# share/), under the prefix and under DESTDIR + the configured prefix.
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
DESTDIR="$tmp/dest" cmake --install "$build" > "$tmp/install-destdir.log"
n=0
for p in "$build"/bin/*; do
  if [ ! -f "$p" ] || [ ! -x "$p" ]; then continue; fi
  n=$((n + 1))
  for root in "$tmp/prefix" "$tmp/dest$prefix"; do
    test -x "$root/bin/${p##*/}" || { echo "missing after install: $root/bin/${p##*/}"; exit 1; }
  done
done
[ "$n" -ge 8 ] || { echo "$build/bin holds $n programs, not the 8 of tools/"; exit 1; }
# Each program of tools/ runs from the prefix as installed: it finds its libraries, and theirs.
for p in "$build"/bin/hako-*; do
  env -u LD_LIBRARY_PATH "$tmp/prefix/bin/${p##*/}" -V > "$tmp/version.txt" 2>&1 ||
    { echo "installed ${p##*/} does not run:"; cat "$tmp/version.txt"; exit 1; }
done
for f in index.html app.js style.css; do
  test -e "$tmp/dest$prefix/share/hako/viewer/www/$f" ||
    { echo "missing after DESTDIR install: $prefix/share/hako/viewer/www/$f"; exit 1; }
done
echo "install check ok"

# The Python module, when built: installed under the prefix, it imports with the interpreter it
# was built for and finds the installed libraries from where it is.
if ls "$build"/python/hakopy.*.so > /dev/null 2>&1; then
  python=$(sed -n 's/^HAKO_PYTHON:INTERNAL=//p' "$build/CMakeCache.txt")
  pydir=$(sed -n 's/^HAKO_PYTHON_INSTALL_DIR:STRING=//p' "$build/CMakeCache.txt")
  ls "$tmp/prefix/$pydir"/hakopy.*.so > /dev/null 2>&1 ||
    { echo "missing after install: $pydir/hakopy.*.so"; exit 1; }
  (cd "$tmp" && env -u LD_LIBRARY_PATH PYTHONPATH="$tmp/prefix/$pydir" "$python" -c \
    "import hakopy, sys; assert hakopy.__file__.startswith('$tmp/prefix/'), hakopy.__file__; assert hakopy.HAKO_ASSET_MODEL_CONTROLLER == 1") ||
    { echo "the installed hakopy does not import"; exit 1; }
  # It uses the prefix's libhako_core, not another one on the machine.
  ldd "$tmp/prefix/$pydir"/hakopy.*.so | grep -q "libhako_core.so.0 => $tmp/prefix/" ||
    { echo "the installed hakopy does not load the prefix's libhako_core:"; ldd "$tmp/prefix/$pydir"/hakopy.*.so; exit 1; }
fi
