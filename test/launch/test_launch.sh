#!/bin/bash
# launch.<scenario>: run hako-launch on a launch file written here, with launch-test-asset as
# the processes, and check its exit status, its last line, the logs, and that no process and no
# domain segment is left behind.
#
# usage: test_launch.sh SCENARIO HAKO_LAUNCH TEST_ASSET HAKO_CMD
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../test/common/hako_test.sh"

SCENARIO=$1
LAUNCH=$2
ASSET_DIR=$(cd "$(dirname "$3")" && pwd -P)
HAKO_CMD=$4
CONDUCTOR=${5:-}

unset HAKO_DOMAIN HAKO_CORE_CONFIG HAKO_LOG NO_COLOR
tmp=$(mktemp -d) || exit 1
cd "$tmp" || exit 1
bg_pids=()

# Every pid the test processes printed ("pid=N" first thing in their logs), and the pids of a
# federation's nodes.
logged_pids() {
	cat logs/*/*.log 2>/dev/null | sed -n 's/^pid=\([0-9]*\)$/\1/p'
	cat out*.txt 2>/dev/null | sed -n 's/^hako-launch: started node [^ ]* (pid \([0-9]*\),.*/\1/p'
}

# The domains hako-launch created.
domains() {
	launch_domains out*.txt
}

cleanup() {
	local ds
	for p in "${bg_pids[@]}" $(logged_pids); do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	mapfile -t ds < <(domains)
	clean_domains "$HAKO_CMD" "${ds[@]}"
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

# launch RC NAME [OPTIONS...]: run hako-launch on NAME.json; its output goes to out-NAME.txt.
launch() {
	local want=$1 name=$2
	shift 2
	timeout -s KILL 60 "$LAUNCH" --path "$ASSET_DIR" "$@" "$name.json" >"out-$name.txt" 2>&1
	local rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "hako-launch $name.json exited $rc, expected $want"
		show "out-$name.txt"
	fi
}

# last_line FILE TEXT: the last line of FILE is exactly TEXT.
last_line() {
	local got
	got=$(tail -n 1 "$1")
	if [ "$got" != "$2" ]; then
		fail "last line of $1 is '$got', expected '$2'"
		show "$1"
	fi
}

# Nothing left: no logged pid alive, no segment of the domains.
all_gone() {
	local p ds
	for p in $(logged_pids); do
		if alive "$p"; then
			fail "process $p is still alive"
			ps -o pid,pgid,stat,args -p "$p"
		fi
	done
	mapfile -t ds < <(domains)
	segments_gone "${ds[@]}"
	if [ -z "$(logged_pids)" ]; then
		fail "no pid in the logs: nothing was checked"
	fi
}

# fed_files STOP_USEC CLIENT_ASSET_ARGS...: a federation of two nodes, srv (stops at STOP_USEC,
# 0 = none) and cli, each its own domain and an asset (sa, ca), on two free ports below the
# ephemeral range (spread by our pid: parallel scenarios differ), in fed.json.
fed_files() {
	local stop=$1 port
	shift
	port=$(free_ports 2) || die "no two free ports"
	local addrs="\"control_address\": \"tcp://127.0.0.1:$port\", \"time_address\": \"tcp://127.0.0.1:$((port + 1))\""
	local timing="\"delta_time_usec\": 1000, \"max_delay_time_usec\": 5000, \"peer_timeout_ms\": 3000"
	mkdir -p srv cli
	echo "{\"server_machine_id\": \"srv\", \"clients\": [{\"client_node_id\": \"cli\"}], $timing, $addrs}" >srv/srv.json
	echo "{\"node_id\": \"cli\", \"server_machine_id\": \"srv\", $timing, $addrs}" >cli/cli.json
	cat >srv/launch.json <<-EOF
	{"conductor": {"federation": "srv.json", "stop_at_usec": $stop, "real_time_factor": 1,
	               "start_timeout_ms": 20000},
	 "log_dir": "logs/srv", "grace_ms": 2000, "processes": [$(asset sa --print-every-usec 100000)]}
	EOF
	cat >cli/launch.json <<-EOF
	{"conductor": {"federation": "cli.json", "real_time_factor": 1, "start_timeout_ms": 20000},
	 "log_dir": "logs/cli", "grace_ms": 2000, "processes": [$(asset ca "$@")]}
	EOF
	echo '{"federation": {"nodes": ["srv/launch.json", "cli/launch.json"]}, "log_dir": "logs/fed"}' >fed.json
}

asset() { # asset NAME [ARGS...]: a process entry of launch-test-asset registering NAME
	local name=$1
	shift
	local args="\"--asset\", \"$name\""
	for a in "$@"; do args="$args, \"$a\""; done
	echo "{\"name\": \"$name\", \"command\": \"launch-test-asset\", \"args\": [$args], \"wait_for\": {\"asset\": \"$name\"}}"
}

case $SCENARIO in
run_ok)
	# Two assets to a stop time: exit 0, logs, and world time exactly at the stop time.
	cat >run.json <<-EOF
	{
	  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "stop_at_usec": 500000},
	  "log_dir": "logs/run",
	  "processes": [
	    $(asset a --print-every-usec 100000),
	    $(asset b)
	  ]
	}
	EOF
	expect 0 "$LAUNCH" --path "$ASSET_DIR" --check run.json
	has "^process a phase=run echo=true$"
	has "^  exe $ASSET_DIR/launch-test-asset$"
	has '^  wait_for asset "b" timeout_ms=10000$'
	[ -e logs/run ] && fail "--check created the log folder"
	# The command line (tools/common/hako_cli): usage errors exit 2 with a hint, -V the version.
	expect 2 "$LAUNCH" --bogus run.json
	has "^hako-launch: unknown option '--bogus'$"
	has "^Try 'hako-launch --help'\.$"
	expect 0 "$LAUNCH" -V
	has '^hako-launch [0-9]'
	expect 0 "$LAUNCH" --help
	has '^usage: hako-launch \[--path DIR\]'
	has '^exit status: 0 all went well'
	launch 0 run
	for f in a b hako-launch; do
		[ -s "logs/run/$f.log" ] || fail "logs/run/$f.log is missing or empty"
	done
	file_has logs/run/a.log '^done asset=a time=500000 steps=500$'
	file_has logs/run/b.log '^done asset=b time=500000 steps=500$'
	file_has logs/run/a.log '^t=500000$'
	file_has out-run.txt '^\[a\] t=300000$'
	file_has out-run.txt '^hako-launch: stop time reached: the simulation stopped at world time 0\.500 s$'
	file_has out-run.txt "^hako-launch: a \(pid [0-9]+\) exited with code 0$"
	file_has logs/run/hako-launch.log '^hako-launch: stop time reached'
	last_line out-run.txt "$(grep '^hako-launch: done: world time 0.500 s in ' out-run.txt)"
	file_has out-run.txt '; logs in logs/run$'
	# --no-echo and --quiet: the logs keep everything, the terminal only the last line.
	sed 's#"logs/run"#"logs/quiet"#' run.json >quiet.json
	launch 0 quiet --no-echo --quiet
	file_has logs/quiet/a.log '^done asset=a time=500000 steps=500$'
	file_lacks out-quiet.txt '^\[a\]'
	[ "$(wc -l <out-quiet.txt)" -eq 1 ] || { fail "--quiet printed more than one line"; show out-quiet.txt; }
	file_has out-quiet.txt '^hako-launch: done: world time 0\.500 s'
	all_gone
	;;
hakoniwa)
	# A launcher file in Hakoniwa's format (hakoniwa-core-pro launcher/): the assets start in
	# depends_on order, each after the one before it and its delay_sec; the first asset that
	# exits stops everything (Hakoniwa's launcher aborts all); the notes say what differs.
	cat >hk.json <<-EOF
	{
	  "version": "0.1",
	  "defaults": {"cwd": ".", "stdout": "logs/\${asset}.out", "delay_sec": 0.2,
	               "env": {"set": {"HK_TEST": "1"}}},
	  "assets": [
	    {"name": "b", "command": "launch-test-asset", "depends_on": ["a"],
	     "args": ["--asset", "b", "--exit-at-usec", "300000", "--exit-code", "0"]},
	    {"name": "a", "command": "launch-test-asset", "args": ["--asset", "a"]}
	  ],
	  "notify": {"type": "exec", "command": "scripts/notify.sh", "args": ["\${asset}"]}
	}
	EOF
	expect 0 "$LAUNCH" --path "$ASSET_DIR" --check hk.json
	has "^hako-launch: hk.json is in Hakoniwa's launcher format"
	has '^  env HK_TEST="1"$'
	has '^  delay_ms 200$'
	grep '^process ' <<<"$out" | head -1 | grep -q '^process a ' ||
		fail "a (which b depends on) is not first"
	launch 1 hk
	file_has out-hk.txt '"notify" is not run'
	started=$(grep -E '^hako-launch: started (a|b) ' out-hk.txt | sed 's/^hako-launch: started \(.\).*/\1/' | tr -d '\n')
	[ "$started" = ab ] || { fail "started in the order '$started', not ab"; show out-hk.txt; }
	file_has logs/hk/b.log '^exiting with code 0 at t=300000$'
	file_has out-hk.txt '^hako-launch: FAILED: process "b" '
	all_gone
	;;
early_exit)
	# b exits with code 3 during the run: all stopped, exit 1, the last line names b.
	cat >early.json <<-EOF
	{
	  "conductor": {"stop_at_usec": 10000000, "real_time_factor": 1},
	  "log_dir": "logs/early",
	  "grace_ms": 3000,
	  "processes": [
	    $(asset a),
	    $(asset b --exit-at-usec 200000 --exit-code 3),
	    {"name": "mon", "command": "launch-test-asset"},
	    {"name": "report", "command": "launch-test-asset", "args": ["--say", "report"], "phase": "after"}
	  ]
	}
	EOF
	launch 1 early
	last_line out-early.txt 'hako-launch: FAILED: process "b" exited with code 3'
	file_has logs/early/b.log '^exiting with code 3 at t=200000$'
	file_has out-early.txt '^hako-launch: the "after" processes were not run$'
	[ -e logs/early/report.log ] && fail "the after process ran"
	all_gone
	;;
crash)
	cat >crash.json <<-EOF
	{
	  "conductor": {"stop_at_usec": 5000000},
	  "log_dir": "logs/crash",
	  "processes": [$(asset a), $(asset c --die-at-usec 50000)]
	}
	EOF
	launch 1 crash
	last_line out-crash.txt 'hako-launch: FAILED: process "c" was killed by signal 9 (Killed)'
	# An asset process that leaves with code 0 in the middle of the run: the domain error
	# names it.
	cat >zero.json <<-EOF
	{
	  "conductor": {"stop_at_usec": 5000000},
	  "log_dir": "logs/zero",
	  "processes": [$(asset a), $(asset z --exit-at-usec 50000 --exit-code 0)]
	}
	EOF
	launch 1 zero
	file_has out-zero.txt "^hako-launch: FAILED: process \"z\" \(asset 'z'\) exited with code 0: domain error: asset 'z' is dead"
	all_gone
	;;
wait_log)
	# srv prints its line after 0.5 s; a starts only then.
	cat >log.json <<-EOF
	{
	  "conductor": {"stop_at_usec": 100000},
	  "log_dir": "logs/log",
	  "processes": [
	    {"name": "srv", "command": "launch-test-asset", "args": ["--say", "listening on 42", "--say-delay-ms", "500"],
	     "wait_for": {"log": "listening on", "timeout_ms": 5000}},
	    $(asset a)
	  ]
	}
	EOF
	launch 0 log
	file_has out-log.txt '^\[srv\] listening on 42$'
	file_has out-log.txt '^hako-launch: srv is ready \(did print "listening on" (0\.[4-9][0-9]|[1-9][0-9]*\.[0-9]+) s after it started\)$'
	ready=$(grep -n '^hako-launch: srv is ready' out-log.txt | cut -d: -f1)
	started=$(grep -n '^hako-launch: started a ' out-log.txt | cut -d: -f1)
	[ -n "$ready" ] && [ -n "$started" ] && [ "$ready" -lt "$started" ] ||
		{ fail "a started before srv was ready"; show out-log.txt; }
	file_has out-log.txt '^hako-launch: stopping srv \(pid [0-9]+, not an asset\): SIGTERM$'
	# A line that never comes.
	sed 's#"logs/log"#"logs/never"#; s#"timeout_ms": 5000#"timeout_ms": 600#; s#"listening on",#"never printed",#' log.json >never.json
	launch 1 never
	last_line out-never.txt 'hako-launch: FAILED: process "srv" did not print "never printed" within 600 ms'
	file_lacks out-never.txt 'started a '
	all_gone
	;;
asset_timeout)
	cat >lazy.json <<-EOF
	{
	  "log_dir": "logs/lazy",
	  "processes": [
	    $(asset a),
	    {"name": "lazy", "command": "launch-test-asset", "wait_for": {"asset": "lazy", "timeout_ms": 700}}
	  ]
	}
	EOF
	launch 1 lazy
	last_line out-lazy.txt "hako-launch: FAILED: process \"lazy\" did not register asset 'lazy' within 700 ms"
	all_gone
	;;
restart)
	# helper fails once, is restarted, and the run goes on. 2 s of wall time: the restarted
	# helper (0.25 s later, slow to start under the sanitizers) must get to print its pid
	# before the run ends and stops it.
	cat >restart.json <<-EOF
	{
	  "conductor": {"stop_at_usec": 4000000, "real_time_factor": 2},
	  "log_dir": "logs/restart",
	  "processes": [
	    $(asset a),
	    {"name": "helper", "command": "launch-test-asset", "args": ["--exit-now", "--exit-code", "4", "--once", "$tmp/once"],
	     "restart": "on-failure", "max_restarts": 2}
	  ]
	}
	EOF
	launch 0 restart
	file_has out-restart.txt '^hako-launch: helper \(pid [0-9]+\) exited with code 4; restarting it in 0\.25 s \(restart 1 of 2\)$'
	file_has out-restart.txt '^hako-launch: restarted helper \(pid [0-9]+\)$'
	file_has logs/restart/helper.log '^---- hako-launch: restart 1 of 2 ----$'
	[ "$(grep -c '^pid=' logs/restart/helper.log)" -eq 2 ] || { fail "helper did not run twice"; show logs/restart/helper.log; }
	file_has logs/restart/a.log '^done asset=a time=4000000 steps=4000$'
	# A helper that always fails: restarted max_restarts times, then the launch fails.
	sed 's#"logs/restart"#"logs/always"#; s#, "--once", "[^"]*"##; s#"max_restarts": 2#"max_restarts": 1#; s#"stop_at_usec": 4000000#"stop_at_usec": 20000000#' restart.json >always.json
	launch 1 always
	last_line out-always.txt 'hako-launch: FAILED: process "helper" exited with code 4 (after 1 restart)'
	all_gone
	;;
restart_asset)
	# b's asset dies in the run: b is restarted and the simulation starts again from 0.
	cat >again.json <<-EOF
	{
	  "conductor": {"stop_at_usec": 300000},
	  "log_dir": "logs/again",
	  "grace_ms": 1000,
	  "processes": [
	    $(asset a --loop),
	    {"name": "b", "command": "launch-test-asset", "args": ["--asset", "b", "--loop", "--die-at-usec", "100000", "--once", "$tmp/once"],
	     "wait_for": {"asset": "b"}, "restart": "on-failure"}
	  ]
	}
	EOF
	launch 0 again
	file_has out-again.txt '^hako-launch: b \(pid [0-9]+\) was killed by signal 9 \(Killed\); restarting it \(restart 1 of 3\) and the simulation from world time 0$'
	file_has out-again.txt '^hako-launch: simulation restarted from world time 0 \(b restarted 1 of 3 times\)$'
	file_has logs/again/a.log '^done asset=a time=300000 steps=300$'
	file_has logs/again/b.log '^done asset=b time=300000 steps=300$'
	file_has out-again.txt '^hako-launch: done: world time 0\.300 s'
	all_gone
	;;
sigint)
	# Ctrl-C while it runs: clean stop, exit 130, children gone (one ignores SIGTERM).
	cat >int.json <<-EOF
	{
	  "conductor": {"real_time_factor": 1},
	  "log_dir": "logs/int",
	  "grace_ms": 1000,
	  "processes": [
	    $(asset a),
	    {"name": "stubborn", "command": "launch-test-asset", "args": ["--ignore-term"]},
	    {"name": "report", "command": "launch-test-asset", "phase": "after"}
	  ]
	}
	EOF
	"$LAUNCH" --path "$ASSET_DIR" int.json >out-int.txt 2>&1 &
	pid=$!
	bg_pids+=("$pid")
	if wait_for_line out-int.txt '^hako-launch: simulation running' 20; then
		sleep 0.3
		kill -INT "$pid"
	fi
	timeout 30 tail --pid="$pid" -f /dev/null
	wait "$pid"
	rc=$?
	[ "$rc" -eq 130 ] || { fail "hako-launch exited $rc after SIGINT, expected 130"; show out-int.txt; }
	last_line out-int.txt 'hako-launch: stopped by SIGINT; every process has ended'
	file_has out-int.txt '^hako-launch: stubborn \(pid [0-9]+\) ignored SIGTERM: SIGKILL$'
	file_has logs/int/a.log '^done asset=a time=[0-9]+ steps=[0-9]+$'
	[ -e logs/int/report.log ] && fail "the after process ran after Ctrl-C"
	all_gone
	;;
killed)
	# hako-launch itself killed with SIGKILL: its children die with it.
	cat >kill.json <<-EOF
	{
	  "conductor": {"real_time_factor": 1},
	  "log_dir": "logs/kill",
	  "processes": [$(asset a), {"name": "plain", "command": "launch-test-asset"}]
	}
	EOF
	"$LAUNCH" --path "$ASSET_DIR" kill.json >out-kill.txt 2>&1 &
	pid=$!
	bg_pids+=("$pid")
	wait_for_line out-kill.txt '^hako-launch: simulation running' 20 && kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	# The children notice their parent's death (PR_SET_PDEATHSIG): wait for that, up to 10 s.
	for ((i = 0; i < 200; i++)); do
		left=0
		for p in $(logged_pids); do
			alive "$p" && left=1
		done
		[ "$left" -eq 0 ] && break
		sleep 0.05
	done
	for p in $(logged_pids); do
		alive "$p" && fail "process $p outlived hako-launch"
	done
	[ -n "$(logged_pids)" ] || fail "no pid in the logs"
	;;
after)
	# An "after" process runs once the simulation stopped; one that fails fails the launch.
	cat >after.json <<-EOF
	{
	  "conductor": {"stop_at_usec": 200000},
	  "log_dir": "logs/after",
	  "processes": [
	    $(asset a),
	    {"name": "report", "command": "launch-test-asset", "args": ["--say", "report: all fine", "--sleep-ms", "0"], "phase": "after"}
	  ]
	}
	EOF
	launch 0 after
	file_has out-after.txt '^\[report\] report: all fine$'
	stop=$(grep -n '^hako-launch: stop time reached' out-after.txt | cut -d: -f1)
	report=$(grep -n '^\[report\] report: all fine' out-after.txt | cut -d: -f1)
	adone=$(grep -n '^\[a\] done asset=a' out-after.txt | cut -d: -f1)
	[ -n "$stop" ] && [ -n "$report" ] && [ -n "$adone" ] && [ "$adone" -lt "$report" ] &&
		[ "$stop" -lt "$report" ] || { fail "report did not run after the simulation"; show out-after.txt; }
	file_has out-after.txt '^hako-launch: report \(pid [0-9]+\) exited with code 0$'
	sed 's#"logs/after"#"logs/after5"#; s#"--say", "report: all fine"#"--exit-now", "--exit-code", "5"#' after.json >after5.json
	launch 1 after5
	last_line out-after5.txt 'hako-launch: FAILED: process "report" exited with code 5'
	all_gone
	;;
busy_domain)
	# The domain has a conductor already: refused, naming it.
	d="launch-busy-$$"
	"$HAKO_CMD" -d "$d" conductor -q >out-conductor.txt 2>&1 &
	cpid=$!
	bg_pids+=("$cpid")
	wait_for_line out-conductor.txt 'running' 10
	cat >busy.json <<-EOF
	{"domain": "$d", "log_dir": "logs/busy", "processes": [$(asset a)]}
	EOF
	launch 1 busy
	last_line out-busy.txt "hako-launch: FAILED: domain '$d' already has a conductor (pid $cpid); hako-launch is the conductor of its domain: stop that one or choose another \"domain\""
	[ -e logs/busy/a.log ] && fail "a process was started"
	kill -INT "$cpid"
	wait "$cpid"
	[ -e "/dev/shm/hako.$d" ] && fail "the conductor's segment is left"
	# A broken launch file: exit 2 with file:line:column.
	printf '{\n  "processes": [{"name": "x", "command": "no-such-program-here"}]\n}\n' >bad.json
	launch 2 bad
	file_has out-bad.txt '^hako-launch: bad\.json:2:42: processes\[0\]\.command: process "x": "no-such-program-here" not found \(looked in '
	;;
fed_ok)
	# A federation file: two nodes, each its own hako-launch and domain; the server starts the
	# federation once the client joined and stops it at 0.3 s; every node ends with its drift
	# table, within Dmax. The client looks at its domain only every 250 ms (a test hook: a
	# loaded machine scheduling it late), so its server's reset after the stop comes before
	# it looks again: it still says where the federation stopped, to the step.
	fed_files 300000
	expect 0 "$LAUNCH" --path "$ASSET_DIR" --check fed.json
	has '^node srv server file .*/srv/launch\.json domain launch-[0-9]+-srv log_dir logs/srv$'
	HAKO_TEST_LAUNCH_CLIENT_POLL_USEC=250000 launch 0 fed
	last_line out-fed.txt 'hako-launch: done: every node of the federation ended well; logs in logs/fed'
	file_has out-fed.txt '^\[srv\] hako-launch: client cli joined$'
	file_has out-fed.txt '^\[cli\] hako-launch: server srv started the federation$'
	file_has out-fed.txt '^\[srv\] hako-launch: stop time reached: the simulation stopped at world time 0\.300 s$'
	file_has out-fed.txt '^\[cli\] hako-launch: the federation stopped at world time 0\.300 s$'
	file_has out-fed.txt '^hako-launch: node srv: done: world time 0\.300 s in '
	file_has logs/srv/sa.log '^done asset=sa time=300000 steps=300$'
	for row in "srv cli" "cli srv"; do
		set -- $row
		line=$(grep -E "^\[$1\] hako-launch:   $2 " out-fed.txt)
		max=$(echo "$line" | awk '{print $7}')
		if [ -z "$max" ] || [ "$max" -gt 5000 ]; then
			fail "$1's drift row for $2: '$line' (Dmax 5000)"
		fi
	done
	[ -s logs/fed/srv.log ] || fail "logs/fed/srv.log is missing or empty"
	all_gone
	;;
fed_fail)
	# The client's asset fails during the run: every node stops, exit 1, the last line names
	# a node and says why.
	fed_files 0 --exit-at-usec 200000 --exit-code 3
	launch 1 fed
	file_has out-fed.txt '^\[cli\] hako-launch: FAILED: process "ca" exited with code 3$'
	file_has out-fed.txt '^hako-launch: FAILED: node "(cli|srv)" exited with code 1 \('
	all_gone
	;;
fed_sigint)
	# Ctrl-C to the federation while it runs: every node stops, exit 130.
	fed_files 0
	"$LAUNCH" --path "$ASSET_DIR" fed.json >out-fed.txt 2>&1 &
	pid=$!
	bg_pids+=("$pid")
	wait_for_line out-fed.txt '^\[srv\] \[sa\] t=100000$' 20 && kill -INT "$pid"
	timeout 30 tail --pid="$pid" -f /dev/null
	wait "$pid"
	rc=$?
	[ "$rc" -eq 130 ] || { fail "hako-launch exited $rc after SIGINT, expected 130"; show out-fed.txt; }
	last_line out-fed.txt 'hako-launch: stopped by SIGINT; every node has ended'
	file_has out-fed.txt '^hako-launch: stopping node srv \(pid [0-9]+\): SIGINT$'
	all_gone
	;;
fed_server_restart)
	# One hako-launch per node, as on two machines. The server's is killed mid-run (SIGKILL:
	# its conductor and its domain gone at once) and started again: the client says so,
	# resets, joins the new server and runs its run to the stop time; both end well.
	fed_files 1000000
	"$CONDUCTOR" keygen srv/srv.json cli/cli.json >out-keygen.txt 2>&1 || fail "keygen failed"
	"$LAUNCH" --path "$ASSET_DIR" cli/launch.json >out-cli.txt 2>&1 &
	cli=$!
	bg_pids+=("$cli")
	"$LAUNCH" --path "$ASSET_DIR" srv/launch.json >out-srv1.txt 2>&1 &
	srv=$!
	bg_pids+=("$srv")
	wait_for_line out-cli.txt '^hako-launch: server srv started the federation$' 20
	wait_for_line logs/srv/sa.log '^t=300000$' 20 && kill -KILL "$srv"
	timeout 30 tail --pid="$srv" -f /dev/null
	timeout -s KILL 60 "$LAUNCH" --path "$ASSET_DIR" srv/launch.json >out-srv2.txt 2>&1
	rc=$?
	[ "$rc" -eq 0 ] || { fail "the new server's hako-launch exited $rc, expected 0"; show out-srv2.txt; }
	file_has out-srv2.txt '^hako-launch: stop time reached: the simulation stopped at world time 1\.000 s$'
	timeout 30 tail --pid="$cli" -f /dev/null
	wait "$cli"
	rc=$?
	[ "$rc" -eq 0 ] || { fail "the client's hako-launch exited $rc, expected 0"; show out-cli.txt; }
	file_has out-cli.txt '^hako-launch: server srv restarted: the run stopped at world time 0\.[0-9]+ s; this node resets and runs again when the new server starts the federation$'
	[ "$(grep -c '^hako-launch: server srv started the federation$' out-cli.txt)" -eq 2 ] ||
		{ fail "the client did not start twice"; show out-cli.txt; }
	file_has out-cli.txt '^hako-launch: done: world time 1\.000 s in '
	# Every process ended, the killed server's too (its segment stays: its creator was killed;
	# the cleanup removes it).
	for p in $(logged_pids); do
		alive "$p" && fail "process $p is still alive"
	done
	;;
fed_join_timeout)
	# A server node alone: without the federation's keys it does not start, and says how to
	# make them; with them its client never joins, and the launch fails naming it.
	fed_files 0
	sed -i 's/"start_timeout_ms": 20000/"start_timeout_ms": 500/' srv/launch.json
	"$LAUNCH" --path "$ASSET_DIR" srv/launch.json >out-nokeys.txt 2>&1
	rc=$?
	[ "$rc" -eq 1 ] || { fail "hako-launch without keys exited $rc, expected 1"; show out-nokeys.txt; }
	file_has out-nokeys.txt "^hako-launch: FAILED: .*/srv/keys/srv\.key: cannot read the node's own key: No such file or directory: make the federation's keys with \`hako-conductor keygen\`"
	"$CONDUCTOR" keygen srv/srv.json cli/cli.json >out-keygen.txt 2>&1 || { fail "keygen failed"; show out-keygen.txt; }
	[ "$(stat -c %a srv/keys/srv.key)" = 600 ] || fail "srv.key is not mode 600"
	[ "$(stat -c %a srv/keys)" = 700 ] || fail "the keys folder is not mode 700"
	"$LAUNCH" --path "$ASSET_DIR" srv/launch.json >out-alone.txt 2>&1
	rc=$?
	[ "$rc" -eq 1 ] || { fail "hako-launch exited $rc, expected 1"; show out-alone.txt; }
	file_has out-alone.txt '^hako-launch: FAILED: client cli did not join within 500 ms \(the server listens on tcp://127\.0\.0\.1:[0-9]+\)$'
	all_gone
	;;
viewer)
	# "viewer": hako-viewer (found beside hako-launch in the build tree's bin/) starts before the
	# processes, its URLs are said, its page answers, it is stopped with the others; a viewer
	# that cannot start (its port taken) is said and the run goes on.
	cat >vw.json <<-EOF
	{
	  "conductor": {"real_time_factor": 1},
	  "log_dir": "logs/vw",
	  "grace_ms": 1000,
	  "viewer": {"port": 0, "rate_hz": 20},
	  "processes": [$(asset a)]
	}
	EOF
	expect 0 "$LAUNCH" --path "$ASSET_DIR" --check vw.json
	has '^viewer port=0 log=logs/vw/viewer\.log$'
	has '^  exe /.*/bin/hako-viewer$'
	has '^  argv "hako-viewer" "-d" "launch-[0-9]+" "--port" "0" "--rate-hz" "20"$'
	"$LAUNCH" --path "$ASSET_DIR" vw.json >out-vw.txt 2>&1 &
	pid=$!
	bg_pids+=("$pid")
	url_re='^hako-launch: viewer: http://127\.0\.0\.1:([0-9]+)/ \(read-only\), http://127\.0\.0\.1:\1/\?token=[0-9a-f]{32} \(control\)$'
	if wait_for_line out-vw.txt '^hako-launch: simulation running' 20; then
		file_has out-vw.txt "$url_re"
		vport=$(sed -En "s#$url_re#\1#p" out-vw.txt)
		# started before the processes
		at_url=$(grep -nE '^hako-launch: viewer: ' out-vw.txt | cut -d: -f1)
		at_a=$(grep -n '^hako-launch: started a ' out-vw.txt | cut -d: -f1)
		[ -n "$at_url" ] && [ -n "$at_a" ] && [ "$at_url" -lt "$at_a" ] ||
			{ fail "the viewer's URLs did not come before the processes started"; show out-vw.txt; }
		status=$(timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$vport &&
			printf 'GET / HTTP/1.1\r\nHost: 127.0.0.1:$vport\r\nConnection: close\r\n\r\n' >&3 &&
			head -n 1 <&3" 2>&1 | tr -d '\r')
		[ "$status" = "HTTP/1.1 200 OK" ] || fail "GET / on the viewer's port $vport: '$status'"
		file_has logs/vw/viewer.log '^hako-viewer: domain .launch-[0-9]+., read-only at http://127\.0\.0\.1:[0-9]+/$'
		# A second launch whose viewer wants the same port: said, the run goes on.
		sed -e "s#\"port\": 0#\"port\": $vport#" -e 's#"logs/vw"#"logs/taken"#' \
			-e 's#"real_time_factor": 1#"stop_at_usec": 300000#' vw.json >taken.json
		launch 0 taken
		file_has out-taken.txt '^hako-launch: viewer: hako-viewer \(pid [0-9]+\) exited with code 1: .*; the run goes on without it \(its log: logs/taken/viewer\.log\)$'
		file_lacks out-taken.txt '^hako-launch: viewer: http'
		file_has out-taken.txt '^hako-launch: done: world time 0\.300 s'
		kill -INT "$pid"
	fi
	timeout 30 tail --pid="$pid" -f /dev/null
	wait "$pid"
	rc=$?
	[ "$rc" -eq 130 ] || { fail "hako-launch exited $rc after SIGINT, expected 130"; show out-vw.txt; }
	file_has out-vw.txt '^hako-launch: stopping viewer \(pid [0-9]+, not an asset\): SIGTERM$'
	file_has logs/vw/viewer.log '^hako-viewer: stopped$'
	viewer_pid=$(sed -n 's/^hako-launch: stopping viewer (pid \([0-9]*\),.*/\1/p' out-vw.txt)
	[ -n "$viewer_pid" ] && alive "$viewer_pid" && fail "hako-viewer $viewer_pid outlived hako-launch"
	all_gone
	;;
*)
	echo "unknown scenario $SCENARIO"
	exit 2
	;;
esac

finish "launch.$SCENARIO"
