#!/bin/bash
# samples.fleet.share: load sharing between two fleet hosts of one domain (RD-Light), with
# fleet-monitor as the ExMonitor, 64 drones for 12 s of world time, each run against one host
# flying the same fleet alone (the same final bytes) and checked by hako-rd check:
#   balance: the hosts start with 48 and 16 drones; the monitor moves drones from the busier
#            host until their step times are even (at least one move, and both end with 24 to
#            40 drones: counts, never a timing);
#   balance3: three hosts start with 40, 16 and 8; the monitor moves drones from the busiest
#            to the least busy, one order at a time (host 1 gives first, and the spread of the
#            counts at the end is less than at the start);
#   kill:    zones at x = 0; host 2 is killed with SIGKILL during the run; hako-launch says so
#            and goes on ("on_failure": "continue"), the monitor reports the lost host and host 1
#            takes its drones over from their last checkpoints, to the same bits;
#   controller: zones, the mission given by fleet-controller (an asset of 20 ms steps, Dmax
#            20 ms) instead of the hosts' built-in one, against one host with the same
#            controller: the same bits, whatever the interleaving of the three processes.
#
# usage: test_fleet_share.sh BUILD_DIR
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../../test/common/hako_test.sh"

# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/fleet_test_kit.sh" "$1" share

# launch file NAME RD EXTRA_CONDUCTOR MONITOR_ARGS [HOST_ARGS FIRST_PROCS]: RD hosts (as many
# as $hosts says, 2 if unset: `hosts=3 write_launch ...`) and the monitor.
write_launch() {
	local name=$1 rd=$2 extra=$3 margs=$4 hargs=${5:-} first=${6:-} procs='' k
	procs=$first
	for k in $(seq 1 "${hosts:-2}"); do
		procs="$procs{\"name\": \"host-$k\", \"command\": \"fleet-host\", \"on_failure\": \"continue\",
     \"args\": [\"--drones\", \"64\", \"--zones\", \"$rd\", \"--node\", \"$k\"$hargs,
              \"--trace\", \"$dir/$name/trace-$k.jsonl\", \"--final\", \"$dir/$name/final-$k.txt\"],
     \"wait_for\": {\"asset\": \"fleet-zone-$k\"}},
    "
	done
	cat >"$dir/$name.json" <<JSON
{
  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "stop_at_usec": 12000000$extra},
  "log_dir": "$dir/$name/logs", "path": ["$bin"],
  "processes": [
    $procs{"name": "monitor", "command": "fleet-monitor", "args": ["--zones", "$rd"$margs]}
  ]
}
JSON
}

# Final states and traces of run NAME against the reference.
check_run() {
	local name=$1
	same_as_ref "$name" "$dir/$name/final.txt" "$dir/$name"/final-*.txt
	rd_check "$name" "$dir/$name/check.txt" '' '' "$dir/$name"/trace-*.jsonl
}

# Sizing: a 2048-drone zones launch file; its first host's "domain_needs" says what the fleet
# needs, so hako-launch creates the domain that big; a core config too small is refused at
# load with the numbers.
mkdir -p "$dir/sizing"
"$bin/fleet-host" --drones 2048 --write-zones "$dir/sizing" >/dev/null || fail "--write-zones 2048"
need=$("$bin/fleet-host" --drones 2048 --zones "$dir/sizing/fleet_rd.json" --node 1 --print-needs)
need_ch=$(sed -n 's/.*"channels": \([0-9]*\).*/\1/p' <<<"$need")
[ "${need_ch:-0}" -gt 12288 ] || fail "sizing: fleet-host --print-needs says '$need'"
echo '{"max_channels": 1000}' >"$dir/sizing/core.json"
for core in none small; do
	extra=''
	[ "$core" = small ] && extra=", \"core_config\": \"$dir/sizing/core.json\""
	cat >"$dir/sizing/$core.json" <<JSON
{"conductor": {"delta_usec": 1000, "max_delay_usec": 1000$extra}, "path": ["$bin"],
 "processes": [{"name": "west", "command": "fleet-host",
   "args": ["--drones", "2048", "--zones", "$dir/sizing/fleet_rd.json", "--node", "1"],
   "domain_needs": ["--print-needs"], "wait_for": {"asset": "fleet-zone-1"}}]}
JSON
	"$launch" --check "$dir/sizing/$core.json" >"$dir/sizing/$core.out" 2>&1
	echo "rc=$?" >>"$dir/sizing/$core.out"
done
grep -Eq "domain sized to the processes' needs: .* max_channels=$((need_ch + 256)) " \
	"$dir/sizing/none.out" || { fail "sizing: the domain was not sized"; show "$dir/sizing/none.out"; }
grep -q "the processes need $need_ch channels, .* allows 1000 channels" "$dir/sizing/small.out" &&
	grep -q "rc=2" "$dir/sizing/small.out" ||
	{ fail "sizing: a core config too small was not refused"; show "$dir/sizing/small.out"; }

# The reference: one host flies the 64 drones alone.
fly_ref ''

# Balance: 48 / 16 at the start.
mkdir -p "$dir/balance"
"$bin/fleet-host" --drones 64 --balance 48 --write-zones "$dir/balance" >/dev/null ||
	fail "fleet-host --balance 48 --write-zones"
write_launch balance "$dir/balance/fleet_rd.json" "" ', "--balance"'
run balance
grep -q "host-1\] fleet-zone-1: host 1 of 64 drones, 48 at the start" "$dir/balance.out" ||
	fail "balance: host 1 did not start with 48 drones"
grep -q "fleet-monitor: t=.*: host 1 spends .* on 48 drones.*moving [0-9]* drones to host 2" \
	"$dir/balance.out" || fail "balance: the monitor did not move drones from host 1"
for k in 1 2; do
	n=$(sed -n "s/.*fleet-zone-$k: .* \([0-9]*\) drones at the end.*/\1/p" "$dir/balance.out")
	if [ -z "$n" ] || [ "$n" -lt 24 ] || [ "$n" -gt 40 ]; then
		fail "balance: host $k ends with '${n}' drones, not 24..40"
	fi
done
check_run balance

# Balance among three hosts: 40 / 16 / 8 at the start.
mkdir -p "$dir/balance3"
"$bin/fleet-host" --drones 64 --balance 40,16 --write-zones "$dir/balance3" >/dev/null ||
	fail "fleet-host --balance 40,16 --write-zones"
hosts=3 write_launch balance3 "$dir/balance3/fleet_rd.json" "" ', "--balance"'
run balance3
start=$(sed -n 's/.*fleet-zone-\([123]\): host [123] of 64 drones, \([0-9]*\) at the start.*/\1:\2/p' \
	"$dir/balance3.out" | sort | tr '\n' ' ')
[ "$start" = "1:40 2:16 3:8 " ] || fail "balance3: the hosts started with '$start', not 40/16/8"
grep -q "fleet-monitor: t=.*: host 1 spends .* on 40 drones.*moving [0-9]* drones to host [23] (order 1)" \
	"$dir/balance3.out" || fail "balance3: the first move is not from host 1"
min=64 max=0
for k in 1 2 3; do
	n=$(sed -n "s/.*fleet-zone-$k: .* \([0-9]*\) drones at the end.*/\1/p" "$dir/balance3.out")
	[ -n "$n" ] || { fail "balance3: host $k said no count at the end"; n=0; }
	[ "$n" -lt "$min" ] && min=$n
	[ "$n" -gt "$max" ] && max=$n
done
[ $((max - min)) -lt 32 ] && [ "$max" -lt 40 ] ||
	fail "balance3: counts at the end from $min to $max (8 to 40 at the start)"
check_run balance3

# Kill: zones, host 2 killed once the run is under way (at 2x real time: 6 s of wall time).
mkdir -p "$dir/kill"
"$bin/fleet-host" --drones 64 --write-zones "$dir/kill" >/dev/null || fail "fleet-host --write-zones"
write_launch kill "$dir/kill/fleet_rd.json" ', "real_time_factor": 2' ''
timeout -s KILL 300 "$launch" "$dir/kill.json" >"$dir/kill.out" 2>&1 &
lpid=$!
# The monitor's first status line comes a second into the run.
for _ in $(seq 1 300); do
	grep -q "^\[monitor\] fleet: t=" "$dir/kill.out" && break
	sleep 0.1
done
pid=$(sed -n 's/.*started host-2 (pid \([0-9]*\)).*/\1/p' "$dir/kill.out")
if [ -n "$pid" ] && grep -q "^\[monitor\] fleet: t=" "$dir/kill.out"; then
	kill -KILL "$pid"
else
	fail "kill: the run did not get under way"
fi
wait "$lpid" || { fail "kill: hako-launch failed"; show "$dir/kill.out" 30; }
lpid=
grep -q "host-2 (pid $pid) was killed by signal 9.*the run goes on without it" "$dir/kill.out" ||
	fail "kill: hako-launch did not report host 2 killed"
grep -q "fleet-monitor: t=.*: host 2 (fleet-zone-2) is lost" "$dir/kill.out" ||
	fail "kill: the monitor did not report host 2 lost"
grep -q "fleet-zone-1: .* [1-9][0-9]* taken from a lost host; 64 drones at the end" "$dir/kill.out" ||
	fail "kill: host 1 did not take the drones of host 2 over"
rm -f "$dir/kill/final-2.txt" # the killed host wrote none (or a stale one)
check_run kill
grep -q "restarts    [1-9]" "$dir/kill/check.txt" || fail "kill: no restart in the traces"

# Controller: the mission from fleet-controller, Dmax 20 ms, against one host with it.
mkdir -p "$dir/controller"
"$bin/fleet-host" --drones 64 --write-zones "$dir/controller" >/dev/null ||
	fail "fleet-host --write-zones (controller)"
ctl='{"name": "controller", "command": "fleet-controller", "args": ["--drones", "64"],
     "wait_for": {"asset": "fleet-controller"}},
    '
write_launch controller "$dir/controller/fleet_rd.json" ', "max_delay_usec": 20000' '' \
	', "--controller"' "$ctl"
sed -i 's/"max_delay_usec": 1000, //' "$dir/controller.json"
cat >"$dir/cref.json" <<JSON
{
  "conductor": {"delta_usec": 1000, "max_delay_usec": 20000, "stop_at_usec": 12000000},
  "log_dir": "$dir/cref-logs", "path": ["$bin"],
  "processes": [$ctl{"name": "ref", "command": "fleet-host",
                 "args": ["--drones", "64", "--controller", "--final", "$dir/cref.txt"],
                 "wait_for": {"asset": "fleet-host-0"}}]
}
JSON
for run in controller cref; do
	run "$run"
	grep -q "command 2: fly to the HAKO letters at 3.000 s" "$dir/$run.out" ||
		fail "$run: the controller did not command the HAKO letters"
done
grep -q "fleet-zone-1: 2 commands of fleet-controller flown" "$dir/controller.out" ||
	fail "controller: host 1 did not fly the controller's 2 commands"
sort -n "$dir/cref.txt" >"$dir/ref-sorted.txt" 2>/dev/null
check_run controller

[ "$fails" -ne 0 ] || grep -hE "fleet-monitor: t=|drones at the end|goes on without" \
	"$dir/balance.out" "$dir/balance3.out" "$dir/kill.out"
finish samples.fleet.share
