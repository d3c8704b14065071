#!/bin/bash
# The fleet as Foxglove's real client decodes it (test/node/foxglove_shot.js), drawn as a page
# and shot by a headless Chromium: the stand-in for a screenshot of Foxglove's 3D panel where
# the app cannot run. 256 drones in zones under hako-launch with the viewer, at 4x real time;
# the picture is taken at 12 s of world time (the "HAKO" letters).
#
# usage: test/viewer/foxglove_shot.sh BUILD_DIR OUT.png [WORLD_S]
set -u
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=$(cd "$1" && pwd) OUT=$2 AT=${3:-12} NAME=fox-shot
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/common/hako_test.sh"
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/viewer/viewer_kit.sh"
start_fleet 256 4 60000000
wait_for_line "$tmp/launch.out" '^hako-launch: viewer: http' 30 || die "no viewer"
PORT=$(sed -n 's|^hako-launch: viewer: http://[^:]*:\([0-9]*\)/ (read-only).*|\1|p' "$tmp/launch.out")
"$SRC/test/node/run.sh" foxglove_shot.js "$PORT" "$tmp/fleet.html" "$AT" || die "foxglove_shot.js"
c=$(command -v chromium || command -v chromium-browser) || die "no chromium"
"$c" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/chrome" \
	--window-size=1060,820 --screenshot="$OUT" "file://$tmp/fleet.html" >"$tmp/chromium.log" 2>&1 ||
	die "chromium: $(cat "$tmp/chromium.log")"
head -c 8 "$OUT" | od -An -c | grep -q 'P   N   G' || die "no PNG at $OUT"
echo "screenshot: $OUT"
