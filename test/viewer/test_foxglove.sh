#!/bin/bash
# viewer.foxglove: a real Foxglove client (test/node/foxglove_live.js: @foxglove/ws-protocol's
# FoxgloveClient, the schemas parsed and the CDR read by @foxglove/rosmsg2-serialization)
# against hako-viewer over the hello sample plus three Twist PDUs (viewer-probe twist, run to
# its end first so that their values are stable); then test/node/foxglove_bad.js: bad input
# and 200 clients that do not read, after which the viewer still answers and the world
# advanced.
#
# usage: test_foxglove.sh BUILD_DIR SOURCE_DIR
set -u
BIN=$1 SRC=$2 NAME=viewer-fox
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/common/hako_test.sh"
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/viewer/viewer_kit.sh"
PDUDEF=$SRC/test/viewer/map_pdudef.json

start_sample
"$PROBE" twist "$HAKO_DOMAIN" 3 0.3 || die "viewer-probe twist failed"
start_viewer --max-message 65536 --max-sessions 300
run_sample
"$SRC/test/node/run.sh" foxglove_bad.js "$VPORT" "$VIEWER_PID" 200 || fail "foxglove_bad.js"
# last: it stops the world
"$SRC/test/node/run.sh" foxglove_live.js "$VPORT" "$TOKEN" "$HAKO_CMD" "$PDUDEF" ||
	fail "foxglove_live.js"
alive "$VIEWER_PID" || fail "hako-viewer is gone"

# The domain replaced under a connected client: its channels go, the new ones come.
"$SRC/test/node/run.sh" foxglove_gone.js "$VPORT" >"$tmp/gone.out" 2>&1 &
gone=$!
pids+=("$gone")
wait_for_line "$tmp/gone.out" '^ready' 20 || die "foxglove_gone.js: no channels"
for p in "${pids[@]:0:3}"; do # the conductor and the hello assets
	kill -TERM "$p" 2>/dev/null
done
wait "${pids[@]:0:3}" 2>/dev/null
"$HAKO_CMD" clean --force >/dev/null 2>&1
"$HAKO_CMD" conductor --real-time-factor 1 --quiet >"$tmp/conductor2.log" 2>&1 &
pids+=($!)
until_ok 10 "$HAKO_CMD" status || die "no second conductor"
"$PROBE" twist "$HAKO_DOMAIN" 3 0.3 || fail "viewer-probe twist (second domain) failed"
wait "$gone" || fail "foxglove_gone.js"
show "$tmp/gone.out"
file_has "$tmp/viewer.err" 'foxglove client 127\.0\.0\.1: clientPublish refused: no token'
if grep -q "$TOKEN" "$tmp/viewer.err"; then
	fail "the token is in the log"
fi
[ "$fails" -eq 0 ] || show "$tmp/viewer.err" 40
finish viewer.foxglove
