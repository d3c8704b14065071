# The set-up shared by the hako-viewer tests: the hello sample (a conductor paced at real time,
# hello-writer, hello-reader) in a domain of the test's own, hako-viewer on a free port (it
# picks one: --port 0), and a headless Chromium driven over its DevTools protocol by
# viewer-probe. Everything started is stopped by the EXIT trap, also when a check fails.
#
# Needs: BIN (the build tree), SRC (the source tree), NAME (the test's name); sources
# test/common/hako_test.sh first.
# shellcheck shell=bash

HAKO_CMD=$BIN/bin/hako-cmd
VIEWER=$BIN/bin/hako-viewer
PROBE=$BIN/test/viewer/viewer-probe
PDUDEF=$SRC/samples/hello/hello_pdudef.json
export HAKO_DOMAIN="$NAME-$$"
unset HAKO_PDUDEF HAKO_CORE_CONFIG HAKO_LOG HAKO_VIEWER_TOKEN
tmp=$(mktemp -d)
pids=()

kit_cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	wait 2>/dev/null
	"$HAKO_CMD" clean --force >/dev/null 2>&1
	rm -rf "$tmp"
}
trap kit_cleanup EXIT

both_registered() {
	local o
	o=$("$HAKO_CMD" ls) && grep -q '^writer ' <<<"$o" && grep -q '^reader ' <<<"$o"
}

is_state() {
	"$HAKO_CMD" status 2>/dev/null | grep -q "^status=$1\$"
}

# start_sample: conductor + the two assets, registered, not started.
start_sample() {
	"$HAKO_CMD" conductor --real-time-factor 1 --quiet >"$tmp/conductor.log" 2>&1 &
	pids+=($!)
	until_ok 10 "$HAKO_CMD" status || die "no conductor"
	"$BIN/samples/hello/hello-writer" "$PDUDEF" >"$tmp/writer.log" 2>&1 &
	pids+=($!)
	"$BIN/samples/hello/hello-reader" "$PDUDEF" >"$tmp/reader.log" 2>&1 &
	pids+=($!)
	until_ok 10 both_registered || die "the hello assets did not register"
}

# start_viewer [OPTION...]: hako-viewer on a free port; sets VPORT and TOKEN.
start_viewer() {
	# Emptied here, not by the redirection below: that one happens in the background job,
	# maybe after wait_for_line has read an earlier viewer's lines (its port, its token).
	: >"$tmp/viewer.out"
	: >"$tmp/viewer.err"
	"$VIEWER" --port 0 --pdudef "$PDUDEF" "$@" >>"$tmp/viewer.out" 2>>"$tmp/viewer.err" &
	VIEWER_PID=$!
	pids+=("$VIEWER_PID")
	wait_for_line "$tmp/viewer.out" '\?token=' 10 || die "hako-viewer did not start"
	VPORT=$(sed -n 's|.*read-only at http://127.0.0.1:\([0-9]*\)/$|\1|p' "$tmp/viewer.out")
	TOKEN=$(sed -n 's|.*?token=\([0-9a-f]*\)$|\1|p' "$tmp/viewer.out")
	[ -n "$VPORT" ] && [ -n "$TOKEN" ] || die "no port or token in: $(cat "$tmp/viewer.out")"
}

run_sample() {
	"$HAKO_CMD" start >/dev/null || die "hako-cmd start failed"
	until_ok 10 is_state running || die "the domain did not run"
}

# start_chromium: headless Chromium with a DevTools port of its choosing; sets DPORT.
start_chromium() {
	local c
	c=$(command -v chromium || command -v chromium-browser) ||
		die "chromium is not installed: the browser tests need Debian's chromium package" \
			"(make test installs it; by hand: apt-get install chromium)"
	"$c" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
		--user-data-dir="$tmp/chrome" --remote-debugging-port=0 --window-size=1280,820 \
		about:blank >"$tmp/chromium.log" 2>&1 &
	pids+=($!)
	wait_for_line "$tmp/chromium.log" 'DevTools listening on ws://' 30 ||
		die "chromium did not start (its log is above)"
	DPORT=$(sed -n 's|.*DevTools listening on ws://[^:]*:\([0-9]*\)/.*|\1|p' "$tmp/chromium.log" |
		head -n 1)
}

# page URL UNTIL [DOM [PNG]]: open URL in Chromium, wait (20 s at most) until the JavaScript
# expression UNTIL is true, save the DOM and a screenshot.
page() {
	"$PROBE" cdp "$DPORT" "$1" "$2" 20 "${3:-}" "${4:-}"
}

# usec DOMFILE: the world time the page showed.
usec() {
	sed -n 's/.*id="world-time" data-usec="\([0-9]*\)".*/\1/p' "$1" | head -n 1
}

# start_fleet DRONES RTF STOP_USEC: the fleet's zones, two fleet-host processes sharing DRONES
# drones (west: node 1, below x = 0; east: node 2), run by hako-launch in the test's domain at
# real-time factor RTF to STOP_USEC of world time, with its "viewer" (hako-viewer with the
# fleet's --pdudef and --rd); its output in $tmp/launch.out.
start_fleet() {
	local fleet=$BIN/samples/fleet drones=$1
	"$fleet/fleet-host" --drones "$drones" --write-zones "$tmp" >"$tmp/zones.out" 2>&1 ||
		die "fleet-host --write-zones: $(cat "$tmp/zones.out")"
	fleet_host() { # fleet_host K: the process entry of the zone host of node K
		echo "{\"name\": \"host-$1\", \"command\": \"fleet-host\", \"on_failure\": \"continue\",
	  \"args\": [\"--drones\", \"$drones\", \"--zones\", \"$tmp/fleet_rd.json\", \"--node\", \"$1\"],
	  \"wait_for\": {\"asset\": \"fleet-zone-$1\"}}"
	}
	cat >"$tmp/launch.json" <<-JSON
{
  "domain": "$HAKO_DOMAIN",
  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "real_time_factor": $2,
                "stop_at_usec": $3},
  "log_dir": "$tmp/logs", "path": ["$fleet"],
  "viewer": {"port": 0, "pdudef": "fleet_pdudef.json", "rd": "fleet_rd.json"},
  "processes": [$(fleet_host 1), $(fleet_host 2)]
}
JSON
	"$BIN/bin/hako-launch" "$tmp/launch.json" >"$tmp/launch.out" 2>&1 &
	pids+=($!)
}
