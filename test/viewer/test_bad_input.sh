#!/bin/bash
# viewer.bad_input: what a hostile or broken client sends is refused and logged, and the viewer
# answers afterwards: paths out of the static folder (plain and percent-encoded), a message over
# --max-message, commands with a bad or no token. Also: a Hakoniwa client's v2 DECLARE_READ gets
# the PDU as a v2 frame, and a client that stops reading costs a bounded queue (the frames it
# does not take are dropped, counted in the state's "viewer" object).
#
# usage: test_bad_input.sh BUILD_DIR SOURCE_DIR
set -u
BIN=$1 SRC=$2 NAME=viewer-bad
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/common/hako_test.sh"
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/viewer/viewer_kit.sh"

start_sample
start_viewer --max-message 4096 --rate-hz 50
run_sample
P=$VPORT

answers() {
	expect 0 "$PROBE" get "$P" /
	has '^status 200$'
	has '<title>hako viewer</title>'
}
answers

for path in /../../etc/passwd /..%2f..%2fetc/passwd /%2e%2e/%2e%2e/etc/passwd \
	/%252e%252e/%252e%252e/etc/passwd /.hidden /sub/app.js; do
	expect 0 "$PROBE" get "$P" "$path"
	if grep -q '^status 200$' <<<"$out" || grep -q 'root:' <<<"$out"; then
		fail "GET $path was served: $out"
	fi
done
file_has "$tmp/viewer.err" 'refused GET .* from 127\.0\.0\.1'
answers

expect 0 "$PROBE" send "$P" 10000
has '^closed (1009|eof)$'
file_has "$tmp/viewer.err" 'refused a message of more than 4096 bytes from 127\.0\.0\.1'
expect 0 "$PROBE" send "$P" 100 # under the limit: not JSON, answered, the session stays
has '^open$'
answers

expect 0 "$PROBE" cmd "$P" '{"cmd":"stop","token":"0000000000000000ffffffffffffffff"}'
has '"ok":false'
has 'refused: bad token'
expect 0 "$PROBE" cmd "$P" '{"cmd":"stop"}'
has 'refused: no token'
file_has "$tmp/viewer.err" 'refused stop from 127\.0\.0\.1: bad token'
is_state running || fail "a refused stop stopped the domain"
answers

# A Hakoniwa client: DECLARE_READ in a v2 frame, the PDU back as a v2 PDU_DATA frame.
expect 0 "$PROBE" v2read "$P" Robot 0
has '^frame robot=Robot channel=0 type=0x42555043 body=32 world_us=[0-9]+ u64@24=[1-9][0-9]*$'

# A client that stops reading: its frames are replaced, not queued.
"$PROBE" stall "$P" 60 >"$tmp/stall.out" 2>&1 &
pids+=($!)
wait_for_line "$tmp/stall.out" stalled 10
dropped() {
	"$PROBE" state "$P" >"$tmp/state.json" 2>/dev/null &&
		! grep -q '"frames_dropped":0,' "$tmp/state.json"
}
until_ok 60 dropped || fail "no frame was ever dropped for the client that stopped reading"
pmax=$(sed -n 's/.*"pending_max":\([0-9]*\).*/\1/p' "$tmp/state.json")
state_len=$(wc -c <"$tmp/state.json")
echo "pending_max $pmax bytes (a state message is $state_len bytes)"
# At most a state message and a reply per session (no subscriptions here).
[ -n "$pmax" ] && [ "$pmax" -le $((2 * state_len + 1024)) ] ||
	fail "a session held $pmax bytes queued: more than one state message and a reply"
answers
alive "$VIEWER_PID" || fail "hako-viewer died"
finish viewer.bad_input
