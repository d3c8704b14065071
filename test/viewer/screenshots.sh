#!/bin/bash
# The screenshots of docs/viewer.md: the hello sample plus three Twist PDUs moving on circles
# (viewer-probe twist), each view of the page captured by a headless Chromium.
#
# usage: test/viewer/screenshots.sh BUILD_DIR [OUT_DIR (default docs/viewer)]
set -u
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=$(cd "$1" && pwd) NAME=viewer-shots
OUT=${2:-$SRC/docs/viewer}
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/common/hako_test.sh"
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/viewer/viewer_kit.sh"
mkdir -p "$OUT"
start_sample
"$PROBE" twist "$HAKO_DOMAIN" 3 120 &
pids+=($!)
PDUDEF=$SRC/test/viewer/map_pdudef.json start_viewer
run_sample
start_chromium
U="http://127.0.0.1:$VPORT/?token=$TOKEN"
page "$U" "document.querySelectorAll('#channels tbody tr').length >= 4" "" "$OUT/dashboard.png"
page "$U&view=map" "(window.n = (window.n || 0) + 1) > 40" "" "$OUT/map.png"
page "$U&view=plot&channel=Drone1/0&field=linear.x" "(window.n = (window.n || 0) + 1) > 60" "" \
	"$OUT/plot.png"
ls -l "$OUT"
