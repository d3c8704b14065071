#!/bin/bash
# viewer.browser_fed: the viewer on a federation node shows its drift against the other nodes.
# Two nodes on this machine (srv-01 and cli-01, each its own domain and a fleet-host of 8
# drones, paced at real time, Dmax 10 ms), started by hako-launch from a federation file; the
# server's launch file has a "viewer". In a headless Chromium, the dashboard's Federation
# section names the node and lists cli-01 with drift samples and a largest drift within Dmax.
# Saves a screenshot in the build tree.
#
# usage: test_browser_fed.sh BUILD_DIR SOURCE_DIR SCREENSHOT
set -u
BIN=$1 SRC=$2 SHOT=$3 NAME=viewer-fed
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/common/hako_test.sh"
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/viewer/viewer_kit.sh"
FLEET=$BIN/samples/fleet

# node ID FIRST_DRONE VIEWER: its launch file.
write_node() {
	mkdir -p "$tmp/$1"
	cat >"$tmp/$1/launch.json" <<JSON
{
  "domain": "$HAKO_DOMAIN-$1", "log_dir": "$tmp/logs/$1", "path": ["$FLEET"],
  "conductor": {"federation": "$1.json"$4}$3,
  "processes": [{"name": "host", "command": "fleet-host",
                 "args": ["--drones", "16", "--first", "$2", "--count", "8"],
                 "wait_for": {"asset": "fleet-host-$2"}}]
}
JSON
}
base=$(free_ports 2) || die "no free ports"
ctl="tcp://127.0.0.1:$base" tim="tcp://127.0.0.1:$((base + 1))"
write_node srv-01 0 ', "viewer": {"port": 0}' ', "real_time_factor": 1, "stop_at_usec": 600000000'
write_node cli-01 8 '' ', "real_time_factor": 1'
cat >"$tmp/srv-01/srv-01.json" <<JSON
{"server_machine_id": "srv-01", "clients": [{"client_node_id": "cli-01"}],
 "delta_time_usec": 1000, "max_delay_time_usec": 10000,
 "control_address": "$ctl", "time_address": "$tim"}
JSON
cat >"$tmp/cli-01/cli-01.json" <<JSON
{"server_machine_id": "srv-01", "node_id": "cli-01",
 "delta_time_usec": 1000, "max_delay_time_usec": 10000,
 "control_address": "$ctl", "time_address": "$tim"}
JSON
cat >"$tmp/federation.json" <<JSON
{"federation": {"name": "$HAKO_DOMAIN", "nodes": ["srv-01/launch.json", "cli-01/launch.json"]},
 "log_dir": "$tmp/logs/federation"}
JSON
"$BIN/bin/hako-launch" "$tmp/federation.json" >"$tmp/launch.out" 2>&1 &
pids+=($!)
wait_for_line "$tmp/launch.out" 'simulation running' 30 || {
	show "$tmp/launch.out" 20
	die "the federation did not start"
}
URL=$(sed -n 's/^\[srv-01\] hako-launch: viewer: \(http[^ ]*\) (read-only), .*/\1/p' "$tmp/launch.out")
[ -n "$URL" ] || die "the server's hako-launch printed no viewer URL"
start_chromium

fed="(() => {
	const r = document.querySelector('#fed tr[data-peer=\"cli-01\"]');
	return !document.getElementById('fed-section').hidden && !!r &&
		Number(r.dataset.samples) > 20 && Number(r.dataset.driftMax) <= 10000 &&
		/node srv-01 \\(server\\)/.test(document.getElementById('fed-node').textContent);
})()"
page "$URL" "$fed" "$tmp/fed.html" "$SHOT" ||
	fail "the page never showed the federation's drift against cli-01"
file_has "$tmp/fed.html" 'data-peer="cli-01"'
file_has "$tmp/fed.html" 'node srv-01 \(server\), Dmax 10.000 ms'
head -c 8 "$SHOT" | od -An -c | grep -q 'P   N   G' || fail "no PNG screenshot at $SHOT"
finish viewer.browser_fed
