#!/bin/bash
# endpoint.mqtt_npm: npm's mqtt client (test/node/mqtt_interop.js) against an mqtt endpoint
# (hako-endpoint) through a real mosquitto: PDUs both ways with exact bytes, a QoS 1 burst in
# order, the broker killed and restarted mid-stream, hostile payloads counted and dropped.
# The script finds the programs and a port and cleans up; mqtt_interop.js runs the broker and
# the endpoints itself, since it kills and restarts the broker in the middle of its stream.
#
# Skipped (exit 77) only when node or mosquitto is not installed; test/node's packages missing
# is a failure that says how to install them (test/node/run.sh).
#
# usage: test_mqtt_npm.sh HAKO_ENDPOINT TEST_NODE_DIR FIXTURES_DIR
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../test/common/hako_test.sh"

TOOL=$1
NODE_DIR=$2
FIXTURES=$3

node=${HAKO_NODE:-node}
if ! command -v "$node" >/dev/null 2>&1; then
	echo "SKIP: node is not installed (make test-deps installs Debian's nodejs and npm)"
	exit 77
fi
mosquitto=''
for d in /usr/sbin /usr/bin /usr/local/sbin /usr/local/bin /sbin /bin; do
	[ -x "$d/mosquitto" ] && mosquitto=$d/mosquitto && break
done
if [ -z "$mosquitto" ]; then
	echo "SKIP: mosquitto is not installed (make test-deps installs Debian's mosquitto)"
	exit 77
fi

tmp=$(mktemp -d) || exit 1
# mqtt_interop.js writes the pid of each broker and endpoint it starts here: were it killed,
# they are killed all the same.
cleanup() {
	local p
	if [ -f "$tmp/pids" ]; then
		while read -r p; do
			kill -KILL "$p" 2>/dev/null
		done <"$tmp/pids"
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

port=$(free_ports 1) || die "no free tcp port"
"$NODE_DIR/run.sh" mqtt_interop.js "$tmp" "$port" "$TOOL" "$mosquitto" \
	"$FIXTURES/pdudef_drone.json" || fail "mqtt_interop.js"
finish endpoint.mqtt_npm
