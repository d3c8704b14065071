#!/bin/bash
# samples.fleet.rd_full: zones across nodes. A federation of three nodes on this machine
# (srv-01, the server and RD authority, which only conducts; cli-01 and cli-02, each its own
# domain and a fleet host), 64 drones for 12 s of world time, Dmax 10 ms: each drone an EU of
# RD-Full, the airspace split at x = 0 between cli-01 (west) and cli-02 (east). The owner asks
# the server to move a drone that crosses; the server commits the move, the owner runs the
# drone to the commit point and hands it over with its context through the conductors.
# Checks: the federation ends well, drones were handed over both ways, the final states of the
# two hosts are the bytes of one host flying the fleet alone, and hako-rd check on both hosts'
# traces (one owner per drone at any world time, every model step once).
#
# usage: test_fleet_rdfull.sh BUILD_DIR
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../../test/common/hako_test.sh"

build=$(cd "$1" && pwd)
launch=$build/bin/hako-launch
hako_cmd=$build/bin/hako-cmd
bin=$build/samples/fleet
dir=$(mktemp -d /tmp/test-fleet-rdfull-XXXXXX) || exit 1
name=fleetf-$$
lpid=''
cleanup() {
	if [ -n "$lpid" ]; then
		kill -TERM "$lpid" 2>/dev/null
		wait "$lpid" 2>/dev/null
	fi
	clean_domains "$hako_cmd" "$name-srv-01" "$name-cli-01" "$name-cli-02" "$name-ref"
	[ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
unset HAKO_DOMAIN

"$bin/fleet-host" --drones 64 --full cli-01,cli-02 --write-zones "$dir" >/dev/null ||
	die "fleet-host --full cli-01,cli-02 --write-zones"
grep -q '"mode": "full"' "$dir/fleet_rd.json" || die "the RD config is not RD-Full"

# node ID NODE_NUMBER: its launch file (one zone host, or nothing on the server).
write_node() {
	local id=$1 k=$2 procs=''
	mkdir -p "$dir/$id"
	if [ "$k" -gt 0 ]; then
		procs="{\"name\": \"zone-$k\", \"command\": \"fleet-host\",
     \"args\": [\"--drones\", \"64\", \"--zones\", \"$dir/fleet_rd.json\", \"--node\", \"$k\",
              \"--conductor\", \"$dir/$id/$id.json\", \"--trace\", \"$dir/trace-$k.jsonl\",
              \"--final\", \"$dir/final-$k.txt\", \"--out\", \"$dir/out\"],
     \"wait_for\": {\"asset\": \"fleet-zone-$k\"}}"
	fi
	local stop=''
	[ "$id" = srv-01 ] && stop=', "stop_at_usec": 12000000'
	cat >"$dir/$id/launch.json" <<JSON
{
  "domain": "$name-$id", "log_dir": "$dir/logs/$id", "path": ["$bin"],
  "conductor": {"federation": "$id.json"$stop},
  "processes": [$procs]
}
JSON
}

# The federation on control port $1 and time port $1 + 1.
write_federation() {
	local ctl="tcp://127.0.0.1:$1" tim="tcp://127.0.0.1:$(($1 + 1))" id
	write_node srv-01 0
	write_node cli-01 1
	write_node cli-02 2
	cat >"$dir/srv-01/srv-01.json" <<JSON
{"server_machine_id": "srv-01",
 "clients": [{"client_node_id": "cli-01"}, {"client_node_id": "cli-02"}],
 "delta_time_usec": 1000, "max_delay_time_usec": 10000,
 "control_address": "$ctl", "time_address": "$tim", "rd_config_path": "$dir/fleet_rd.json"}
JSON
	for id in cli-01 cli-02; do
		cat >"$dir/$id/$id.json" <<JSON
{"server_machine_id": "srv-01", "node_id": "$id",
 "delta_time_usec": 1000, "max_delay_time_usec": 10000,
 "control_address": "$ctl", "time_address": "$tim", "rd_config_path": "$dir/fleet_rd.json"}
JSON
	done
	cat >"$dir/federation.json" <<JSON
{"federation": {"name": "$name", "nodes": ["srv-01/launch.json", "cli-01/launch.json",
                                           "cli-02/launch.json"]},
 "log_dir": "$dir/logs/federation"}
JSON
}

rc=1
for _ in 1 2 3; do
	base=$(free_ports 2) || die "no free ports"
	rm -rf "$dir/out" "$dir/logs" "$dir"/trace-* "$dir"/final-*
	mkdir -p "$dir/out"
	write_federation "$base"
	timeout -s KILL 300 "$launch" "$dir/federation.json" >"$dir/fed.txt" 2>&1 &
	lpid=$!
	wait "$lpid"
	rc=$?
	lpid=''
	if [ "$rc" -ne 0 ] && grep -qiE "address already in use|cannot listen" "$dir/fed.txt"; then
		echo "ports from $base were taken meanwhile; again with others"
		continue
	fi
	break
done
if [ "$rc" -ne 0 ]; then
	fail "federation: hako-launch exited with $rc"
	show "$dir/fed.txt" 40
fi
file_has "$dir/fed.txt" "^hako-launch: done: every node of the federation ended well"
for k in 1 2; do
	n=$(sed -n "s/.*fleet-zone-$k: \([0-9]*\) drones handed to the other zone.*/\1/p" "$dir/fed.txt")
	[ "${n:-0}" -gt 0 ] || fail "the host of RD node $k handed no drone over"
done

# One host flies the fleet alone, to 12 s.
cat >"$dir/ref.json" <<JSON
{"domain": "$name-ref",
 "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "stop_at_usec": 12000000},
 "log_dir": "$dir/logs/ref", "path": ["$bin"],
 "processes": [{"name": "ref", "command": "fleet-host",
                "args": ["--drones", "64", "--final", "$dir/ref.txt"],
                "wait_for": {"asset": "fleet-host-0"}}]}
JSON
timeout -s KILL 120 "$launch" "$dir/ref.json" >"$dir/ref.out" 2>&1 ||
	{ fail "ref: hako-launch failed"; show "$dir/ref.out" 20; }
sort -n "$dir"/final-1.txt "$dir"/final-2.txt >"$dir/zones.txt" 2>/dev/null
sort -n "$dir/ref.txt" >"$dir/ref-sorted.txt" 2>/dev/null
[ "$(wc -l <"$dir/zones.txt")" -eq 64 ] || fail "not 64 final states from the two nodes"
cmp -s "$dir/zones.txt" "$dir/ref-sorted.txt" ||
	fail "the final states of the two nodes differ from one host's"
"$build/bin/hako-rd" check "$dir/trace-1.jsonl" "$dir/trace-2.jsonl" >"$dir/check.txt" 2>&1 ||
	{ fail "hako-rd check"; show "$dir/check.txt" 10; }
grep -q "model steps 768000" "$dir/check.txt" || {
	fail "not every model step traced once"
	show "$dir/check.txt" 10
}

[ "$fails" -ne 0 ] || grep -hE "drones handed|done: every node|handoffs|violations" \
	"$dir/fed.txt" "$dir/check.txt"
finish samples.fleet.rd_full
