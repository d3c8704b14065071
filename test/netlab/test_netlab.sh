#!/usr/bin/env bash
# hako-netlab: a lab of three nodes (own /dev/shm, own addresses, tcp between them, a hako
# domain each under one name), link down and up, a relay on the switch, a node killed whole,
# and nothing left behind after down, after run (its command ending well or badly) and after
# the supervisor is SIGKILLed. Skipped (77) with the reason when namespaces cannot be made.
#
# usage: test_netlab.sh HAKO_NETLAB HAKO_CMD HAKO_RELAY
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/hako_test.sh"
NL=$1 HCMD=$2 RELAY=$3
ECHO=$here/netlab_echo.py

if ! why=$("$NL" probe 2>&1); then
	echo "SKIP: $why"
	exit 77
fi

tmp=$(mktemp -d)
labs=()
bg=()
cleanup() {
	local p l
	for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done
	for l in "${labs[@]}"; do "$NL" down "$l" >/dev/null 2>&1; done
	rm -rf "$tmp" "/dev/shm/netlab-$$"
}
trap cleanup EXIT

# Names that no other test running now can have; the subnets live in the labs' own network
# namespaces, so they could not collide anyway.
L=nl$$-main
sub=10.$((200 + $$ % 50)).$(($$ % 250))
A=$sub.11 B=$sub.12 C=$sub.13 SW=$sub.1
cat >"$tmp/lab.json" <<EOF
{"subnet": "$sub.0/24",
 "nodes": [{"name": "a", "address": "$A"}, {"name": "b", "address": "$B"},
           {"name": "c", "address": "$C"}]}
EOF
links_before=$(ip -o link show | awk -F': ' '{print $2}' | sort)

# lab_ids STATE OUT: the holders' pids and start times, and their namespaces, from a live lab.
lab_ids() {
	awk '$1 == "node" {print $3, $4}' "$1" >"$2.pids"
	: >"$2.ns"
	local pid start k
	while read -r pid start; do
		for k in net pid mnt ipc uts; do
			readlink "/proc/$pid/ns/$k" >>"$2.ns"
		done
	done <"$2.pids"
}

# nothing_left NAME IDS: no state directory, no holder, no process in any of the lab's
# namespaces, the host's links as they were, no /dev/shm file of ours on the host.
nothing_left() {
	local name=$1 ids=$2 pid start ns
	[ -e "/run/hako-netlab/$name" ] && echo "/run/hako-netlab/$name is left" && return 1
	while read -r pid start; do
		if [ "$(awk '{print $22}' "/proc/$pid/stat" 2>/dev/null)" = "$start" ]; then
			echo "holder $pid is left" && return 1
		fi
	done <"$ids.pids"
	ns=$(find /proc/[0-9]*/ns/ -type l -printf '%h %l\n' 2>/dev/null | grep -F -f "$ids.ns" |
		head -1)
	[ -n "$ns" ] && echo "a process holds a namespace of the lab: $ns" && return 1
	[ "$(ip -o link show | awk -F': ' '{print $2}' | sort)" = "$links_before" ] ||
		{ echo "the host's links changed" && return 1; }
	ls /dev/shm/netlab-$$* >/dev/null 2>&1 && echo "a /dev/shm file is left" && return 1
	return 0
}

check_nothing_left() {
	local i msg
	for ((i = 0; i < 200; i++)); do
		msg=$(nothing_left "$1" "$2") && return 0
		sleep 0.05
	done
	fail "lab $1 left something: $msg"
}

# client NODE HOST PORT [TIMEOUT]: the echo from NODE.
client() {
	"$NL" exec "$L" "$1" -- python3 "$ECHO" client "$2" "$3" "${4:-5}"
}

echo "== up"
labs+=("$L")
# Tied to this shell: a test killed by ctest's timeout (no EXIT trap) leaves no lab behind.
expect 0 "$NL" up --name "$L" --while-pid $$ "$tmp/lab.json"
has "^$L /run/hako-netlab/$L/state$"
lab_ids "/run/hako-netlab/$L/state" "$tmp/main"
same "holders" "$(wc -l <"$tmp/main.pids")" 4

echo "== each node has its own /dev/shm"
expect 0 "$NL" exec "$L" a -- sh -c "echo a >/dev/shm/netlab-$$ && cat /dev/shm/netlab-$$"
has "^a$"
expect 1 "$NL" exec "$L" b -- test -e "/dev/shm/netlab-$$"
expect 1 "$NL" exec "$L" c -- test -e "/dev/shm/netlab-$$"
[ -e "/dev/shm/netlab-$$" ] && fail "node a's /dev/shm file is on the host"
expect 0 "$NL" exec "$L" b -- hostname
has "^b$"

echo "== tcp between nodes, by address"
"$NL" exec "$L" a -- python3 "$ECHO" server 7000 >"$tmp/server.log" 2>&1 &
bg+=($!)
wait_for_line "$tmp/server.log" "^listening 7000" 10
expect 0 client b "$A" 7000
has "^echo hello from b "
expect 0 client c "$A" 7000
has "^echo hello from c "
expect 1 client b 127.0.0.1 7000 # a's server is not on b's loopback

echo "== link down partitions a node, up heals it"
expect 0 "$NL" link "$L" b down
expect 1 client b "$A" 7000 1
expect 0 client c "$A" 7000 # the others still talk
expect 0 "$NL" status "$L"
has "^b +[0-9]+ +$B/24 +n1 +up +DOWN"
expect 0 "$NL" link "$L" b up
until_ok 10 client b "$A" 7000

echo "== a relay on the switch: delay and cut"
"$NL" exec "$L" switch -- "$RELAY" --listen "$SW:7100" --to "$A:7000" --delay-ms 40 \
	--control "$tmp/relay.sock" >"$tmp/relay.log" 2>&1 &
bg+=($!)
wait_for_line "$tmp/relay.log" "ready" 10
expect 0 client b "$SW" 7100
has "^echo hello from b "
ms=$(awk '{print $NF}' <<<"$out")
[ "${ms:-0}" -ge 80 ] || fail "through the relay (40 ms each way) the echo took ${ms} ms"
relay_cmd() {
	python3 -c 'import socket,sys
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode()+b"\n")
print(s.makefile().readline().strip())' "$tmp/relay.sock" "$1"
}
same "relay cut" "$(relay_cmd cut)" ok
expect 1 client b "$SW" 7100 1
same "relay restore" "$(relay_cmd restore)" ok
until_ok 10 client b "$SW" 7100

echo "== a hako domain in each node under one name"
dom=netlab$$
for n in a b; do
	"$NL" exec "$L" "$n" -- "$HCMD" -d "$dom" conductor -q >"$tmp/cond-$n.log" 2>&1 &
	bg+=($!)
done
for n in a b; do
	until_ok 10 "$NL" exec "$L" "$n" -- "$HCMD" -d "$dom" status
	expect 0 "$NL" exec "$L" "$n" -- test -e "/dev/shm/hako.$dom"
done
expect 1 "$NL" exec "$L" c -- test -e "/dev/shm/hako.$dom"
[ -e "/dev/shm/hako.$dom" ] && fail "a node's domain segment is on the host"
for p in "${bg[@]: -2}"; do
	alive "$p" || fail "a conductor of domain $dom ended: $(cat "$tmp"/cond-*.log)"
done

echo "== kill: every process of a node at once"
expect 0 "$NL" exec "$L" c -- sh -c 'for i in 1 2 3 4 5; do sleep 1000 >/dev/null 2>&1 & done; echo started'
has "^started$"
cpid=$(awk '$1 == "node" && $2 == "c" {print $3}' "/run/hako-netlab/$L/state")
cns=$(readlink "/proc/$cpid/ns/pid")
in_c() {
	local p n=0
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/ns/pid" 2>/dev/null)" = "$cns" ] && n=$((n + 1))
	done
	echo "$n"
}
same "processes in c (its init and 5 sleeps)" "$(in_c)" 6
expect 0 "$NL" kill "$L" c
has "^node c killed: 6 processes$"
same "processes in c after kill" "$(in_c)" 0
expect 0 "$NL" status "$L"
has "^c +[0-9]+ +$C/24 +n2 +dead"
expect 1 client a "$C" 7000 1
expect 0 client b "$A" 7000 # the others live on

echo "== down leaves nothing"
expect 0 "$NL" down "$L"
check_nothing_left "$L" "$tmp/main"

echo "== run: the command's status, and nothing left"
R=nl$$-run
snap='cp "$HAKO_NETLAB_STATE" "$0.state"'
expect 0 "$NL" run --name "$R" "$tmp/lab.json" -- sh -c "$snap &&
	\"\$HAKO_NETLAB_EXE\" exec \"\$HAKO_NETLAB\" a -- sh -c 'echo x >/dev/shm/netlab-$$-run; sleep 1000 >/dev/null 2>&1 &'" \
	"$tmp/run"
lab_ids "$tmp/run.state" "$tmp/run"
check_nothing_left "$R" "$tmp/run"

expect 7 "$NL" run --name "$R" "$tmp/lab.json" -- sh -c "$snap && exit 7" "$tmp/fail"
lab_ids "$tmp/fail.state" "$tmp/fail"
check_nothing_left "$R" "$tmp/fail"

echo "== the supervisor SIGKILLed: nothing left"
K=nl$$-kill
# The command records the lab (lab_ids needs the holders alive), starts processes in two
# nodes, then SIGKILLs its supervisor.
{
	echo 'set -e'
	echo 'cp "$HAKO_NETLAB_STATE" "$1.state"'
	declare -f lab_ids
	echo 'lab_ids "$1.state" "$1"'
	echo '"$HAKO_NETLAB_EXE" exec "$HAKO_NETLAB" b -- sleep 1000 >/dev/null 2>&1 &'
	echo '"$HAKO_NETLAB_EXE" exec "$HAKO_NETLAB" a -- sh -c "sleep 1000 >/dev/null 2>&1 &
		sleep 1000 >/dev/null 2>&1 & echo up"'
	echo 'kill -9 $PPID'
} >"$tmp/crash.sh"
"$NL" run --name "$K" "$tmp/lab.json" -- bash "$tmp/crash.sh" "$tmp/killed" >"$tmp/killed.log" 2>&1
rc=$?
[ "$rc" = 137 ] || { fail "run whose supervisor was SIGKILLed exited $rc"; show "$tmp/killed.log"; }
same "namespaces recorded before the kill" "$(wc -l <"$tmp/killed.ns")" 20
file_has "$tmp/killed.log" "^up$"
check_nothing_left "$K" "$tmp/killed"

echo "== a bad lab file is named with its place"
printf '{"nodes": [{"name": "a", "address": "10.9.0.11"},\n  {"name": "b", "address": "10.9.0.11"}]}\n' >"$tmp/bad.json"
expect 1 "$NL" run "$tmp/bad.json" -- true
has "bad.json:2:28: nodes\[1\].address: \"10.9.0.11\" is already the address of node \"a\""

finish netlab
