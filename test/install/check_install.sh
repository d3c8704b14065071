#!/bin/sh
# Install the build tree into a temporary prefix and build a program against it twice: with
# pkg-config and with find_package(hako). Usage: check_install.sh <build-dir> <source-dir>
set -eu
build=$1
src=$2
tmp=$(mktemp -d /tmp/hako-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc "$src/consumer.c" $(pkg-config --cflags --libs hako) -Wl,-rpath,"$tmp/prefix/lib" -o "$tmp/consumer-pc"
"$tmp/consumer-pc" | grep -qx "hako consumer ok"
mkdir "$tmp/cm"
cat > "$tmp/cm/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(hako REQUIRED)
add_executable(consumer "$src/consumer.c")
target_link_libraries(consumer hako::hako_bridge hako::hako_rd)
EOT
cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" > "$tmp/cm.log"
cmake --build "$tmp/cm/build" > "$tmp/cm-build.log"
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/cm/build/consumer" | grep -qx "hako consumer ok"
for f in bin/hako-cmd bin/hako-launch bin/hako-rd bin/hako-msggen bin/hako-bridge bin/hako-endpoint \
         include/hako_asset.h include/hako_conductor.h include/hako_simevent.h include/hako/hako_asset.h \
         include/hako_capi.h include/hako/hako_capi.h include/hako_asset_service.h include/hako/hako_asset_service.h \
         include/hako/domain.h include/hako/rd.h include/hako/endpoint.h include/hako/frame.h include/hako/pdu.h include/hako/msg.h \
         include/hako/msgs/geometry_msgs/Twist.h include/hako/msgs/hako_msgs/SimTime.h \
         include/hako/limits.h bin/hello-check share/hako/samples/hello/launch.json \
         lib/pkgconfig/hako.pc lib/cmake/hako/hakoConfig.cmake share/hako/msg/std_msgs/Header.msg; do
  test -e "$tmp/prefix/$f" || { echo "missing after install: $f"; exit 1; }
done
echo "install check ok"
