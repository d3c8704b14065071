#!/bin/bash
# tools.hako_cmd: drive hako-cmd against a real conductor and the hello assets, checking what
# every command prints and its exit status.
#
# usage: test_hako_cmd.sh HAKO_CMD HELLO_WRITER HELLO_READER HELLO_PDUDEF
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../test/common/hako_test.sh"

HAKO_CMD=$1
WRITER=$2
READER=$3
PDUDEF=$4

export HAKO_DOMAIN="hakocmd-test-$$"
unset HAKO_PDUDEF HAKO_CORE_CONFIG HAKO_LOG
tmp=$(mktemp -d)
fails=0
pids=()

cleanup() {
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	wait 2>/dev/null
	"$HAKO_CMD" clean --force >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

hako() {
	"$HAKO_CMD" "$@"
}

both_registered() {
	local o
	o=$(hako ls) && grep -q '^writer ' <<<"$o" && grep -q '^reader ' <<<"$o"
}

D=$HAKO_DOMAIN

# ---- usage ----
expect 2 hako
has 'usage: hako-cmd'
expect 0 hako --help
has 'conductor +create the domain'
expect 0 hako start --help
has 'usage: hako-cmd start'
expect 0 hako help watch
has '--interval-ms'
expect 2 hako bogus
has "unknown command 'bogus'"
expect 2 hako status --bogus
has "hako-cmd status: unknown option '--bogus'"
expect 2 hako conductor --delta-usec x
has "not an integer"
expect 2 hako conductor --delta-usec 1000 --max-delay-usec 10
has 'must be >= --delta-usec'

# ---- types (no domain needed) ----
expect 0 hako types
has '^geometry_msgs/Twist$'
has '^hako_msgs/ExecutionUnitRuntimeStatus$'
has '^std_msgs/UInt64$'
expect 0 hako type geometry_msgs/Twist
has '^geometry_msgs/Twist \(<builtin>/geometry_msgs/Twist\.msg\)$'
has '^size 48, align 8, fixed PDU size 72 bytes'
has '^ +OFFSET +SIZE +KIND +FORM +COUNT +FIELD +TYPE$'
has '^ +24 +24 +struct +single +- +angular +geometry_msgs/Vector3$'
has '^ +40 +8 +float64 +single +-    z +float64$' # indented under angular
expect 0 hako type sensor_msgs/PointCloud2
has '^ +144 +8 +struct +varray +- +fields +sensor_msgs/PointField\[\]$'
has '^ +\+128 +4 +uint32 +single +-    offset +uint32$'
has 'heap for the variable arrays'
expect 0 hako type sensor_msgs/Imu
has ' +72 +float64 +array +9 +orientation_covariance +float64\[9\]$'
expect 1 hako type nosuch_msgs/Thing
has 'nosuch_msgs/Thing'
expect 2 hako type
has 'need one <pkg/Type>'
mkdir -p "$tmp/msg/my_msgs"
printf 'bool on\nstring[2] names\n' >"$tmp/msg/my_msgs/Switch.msg"
printf 'int32 ok\nbogus_type x\n' >"$tmp/msg/my_msgs/Broken.msg"
expect 0 env HAKO_MSG_PATH="$tmp/msg" "$HAKO_CMD" types
has '^my_msgs/Switch$'
has '^geometry_msgs/Twist$'
expect 0 env HAKO_MSG_PATH="$tmp/msg" "$HAKO_CMD" type my_msgs/Switch
has '^size 260, align 4'
has '^ +4 +256 +string +array +2 +names +string\[2\]$'
expect 1 env HAKO_MSG_PATH="$tmp/msg" "$HAKO_CMD" type my_msgs/Broken
has 'my_msgs/Broken\.msg:2:'
expect 0 hako schema geometry_msgs/TwistStamped
has '^std_msgs/Header header$'
has '^geometry_msgs/Twist twist$'
has '^={80}$'
has '^MSG: builtin_interfaces/Time$'
has '^MSG: geometry_msgs/Vector3$'
expect 1 hako schema nosuch_msgs/Thing
has 'nosuch_msgs/Thing'

# ---- no domain yet ----
expect 1 hako status
has "no domain '$D' \(is a conductor running\? start one with: hako-cmd conductor\)"
expect 1 hako -d "$D-other" ls
has "no domain '$D-other'"
expect 1 hako clean
has 'nothing to clean'

# ---- a conductor ----
"$HAKO_CMD" conductor --real-time-factor 1 >"$tmp/conductor.out" 2>&1 &
cpid=$!
pids+=("$cpid")
until_ok 5 hako status || exit 1

expect 1 hako conductor
has "domain '$D' already has a conductor \(pid $cpid\)"
expect 0 hako status
has '^status=stopped$'
has "conductor +pid $cpid, alive"
has '^assets +0$'
expect 0 hako info
has '^layout version +[0-9]+'
has '^assets +0 of 64$'
has 'clock +delta 1000 us, max delay 1000 us, real-time factor 1'
has '^liveness +error'
has '^no channels$'
expect 0 hako ls
has "no assets registered in domain '$D'"
expect 1 hako clean
has "domain '$D' has a live conductor \(pid $cpid\)"

# ---- two assets ----
"$WRITER" "$PDUDEF" >"$tmp/writer.out" 2>&1 &
wpid=$!
"$READER" "$PDUDEF" >"$tmp/reader.out" 2>&1 &
rpid=$!
pids+=("$wpid" "$rpid")
until_ok 5 both_registered || {
	cat "$tmp/writer.out" "$tmp/reader.out"
	exit 1
}

expect 0 hako ls
has '^NAME +ID +PID +ALIVE +TIME\[s\] +DELTA\[us\] +LAG\[ms\] +STEPS +HEARTBEAT\[ms\] +PENDING$'
has "^writer +[0-9]+ +$wpid +yes +0\.000 +1000 "
has "^reader +[0-9]+ +$rpid +yes +0\.000 +1000 "
expect 0 hako info
has '^channels +1 of 4096$'
has '^Robot +0 +32 +0$'
expect 0 hako pdu Robot 0
has '^Robot/0: never written \(channel size 32 bytes\)$'
expect 1 hako pdu Robot counter
has "'counter' is not a channel id; give --pdudef FILE"

expect 0 hako start
has "^domain '$D': stopped -> running$"
expect 1 hako start
has "cannot start: domain '$D' is running"
sleep 0.3
expect 0 hako status
has '^status=running$'
has '^world time +[0-9]+\.[0-9]{3} s \([1-9][0-9]* steps\)$'
has '^assets +2$'
expect 0 hako watch --count 2 --interval-ms 100
has "^domain '$D' +running +world"
has '^ASSET +TIME\[s\] +DRIFT\[ms\] +MAX DRIFT\[ms\] +STEPS +ALIVE$'
has '^writer +[0-9]+\.[0-9]{3} +'
has '^max drift seen: .*\(Dmax 1\.000 ms\)$'
expect 1 hako reset
has "cannot reset: domain '$D' is running \(stop it first: hako-cmd stop\)"

expect 0 hako stop
has "^domain '$D': running -> stopped$"
expect 1 hako stop
has "cannot stop: domain '$D' is stopped"
expect 0 hako pdu Robot 0
has '^Robot/0: seq [1-9][0-9]*, 32 of 32 bytes$'
has '^meta: version 1, base offset 24, heap offset 32, total size 32, epoch 0'
has '^00000000  78 56 34 12 01 00 00 00  18 00 00 00 20 00 00 00  \|xV4'
expect 0 hako pdu --pdudef "$PDUDEF" Robot counter
has '^Robot/0 "counter" \(std_msgs/UInt64\): seq [1-9]'
has '^meta: version 1, base offset 24'
has '^  "data": [1-9][0-9]*$'
expect 0 hako pdu --pdudef "$PDUDEF" --hex Robot counter
has '^00000000  78 56 34 12 01 00 00 00  18 00 00 00 20 00 00 00  \|xV4'
expect 0 hako pdu --type std_msgs/UInt64 Robot 0
has '^Robot/0 \(std_msgs/UInt64\): seq [1-9]'
has '"data": [1-9]'
expect 0 hako pdu --type nosuch_msgs/Thing Robot 0
has '^note: .*nosuch_msgs/Thing.*; hex dump instead$'
has '^00000000  78 56 34 12'
expect 0 hako pdu --type std_msgs/String Robot 0
has '^note: not a valid std_msgs/String PDU: .*; hex dump instead$'
expect 1 hako pdu --json Robot 0
has 'the type of Robot/0 is not known'
expect 2 hako pdu --json --hex Robot 0
has 'exclude each other'

# ---- pdu-write: the values written are the values pdu prints ----
expect 0 hako pdu-write --pdudef "$PDUDEF" Robot counter '{"data": 9007199254740993}'
has '^Robot/0 "counter" \(std_msgs/UInt64\): wrote 32 of 32 bytes \(seq [1-9][0-9]*\)$'
expect 0 hako pdu --pdudef "$PDUDEF" --json Robot counter
has '"data": 9007199254740993'
expect 0 hako pdu --pdudef "$PDUDEF" --hex Robot counter
has '^00000010  20 00 00 00 00 00 00 00  01 00 00 00 00 00 20 00  \|'
echo '{"data": 42}' >"$tmp/in.json"
expect 0 env HAKO_PDUDEF="$PDUDEF" "$HAKO_CMD" pdu-write Robot 0 - <"$tmp/in.json"
has 'wrote 32 of 32 bytes'
expect 0 hako pdu --type std_msgs/UInt64 --json Robot 0
has '^\{?"data": 42\}?$|^  "data": 42$'
if ! "$HAKO_CMD" pdu --raw Robot 0 >"$tmp/raw.bin" ||
	[ "$(od -An -tx1 -j24 -N1 "$tmp/raw.bin" | tr -d ' ')" != "2a" ]; then
	echo "FAIL: pdu --raw does not write the bare bytes of the PDU pdu-write wrote"
	fails=$((fails + 1))
fi
expect 1 hako pdu-write --pdudef "$PDUDEF" Robot counter '{"data": 1, "nosuch": 2}'
has 'JSON for std_msgs/UInt64: .*nosuch'
expect 1 hako pdu-write --pdudef "$PDUDEF" Robot counter '{"data": '
has 'JSON for std_msgs/UInt64: '
expect 1 hako pdu-write --pdudef "$PDUDEF" Robot counter '{"data": -1}'
has 'JSON for std_msgs/UInt64: .*data'
expect 1 hako pdu-write Robot 0 '{"data": 1}'
has 'the type of Robot/0 is not known; give --pdudef FILE'
expect 1 hako pdu-write --type geometry_msgs/Twist Robot 0 '{"linear": {"x": 1}}'
has 'Robot/0: the PDU needs 72 bytes, the channel has 32'
expect 1 hako pdu-write --type nosuch_msgs/Thing Robot 0 '{}'
has 'nosuch_msgs/Thing'
expect 1 hako pdu-write --type std_msgs/UInt64 Robot 9 '{}'
has "domain '$D' has no channel Robot/9"
expect 2 hako pdu-write Robot 0
has "need <robot>, <name\|channel-id> and '<json>'"
expect 0 hako pdu --pdudef "$PDUDEF" --json Robot counter
has '"data": 42' # the refused writes changed nothing
expect 0 env HAKO_PDUDEF="$PDUDEF" "$HAKO_CMD" pdu Robot counter
has '"counter"'
expect 1 hako pdu Robot 7
has "domain '$D' has no channel Robot/7"
expect 1 hako pdu --pdudef "$PDUDEF" Robot nosuch
has "no PDU 'nosuch' for robot 'Robot'"

expect 0 hako reset
has "^domain '$D': stopped -> resetting -> stopped$"
# After one start/stop/reset cycle the hello assets report and exit 0.
for p in "$wpid" "$rpid"; do
	if ! wait "$p"; then
		echo "FAIL: asset process $p exited non-zero"
		cat "$tmp/writer.out" "$tmp/reader.out"
		fails=$((fails + 1))
	fi
done
out=$(cat "$tmp/writer.out")
has '^\[writer\] done: [1-9][0-9]* steps'
expect 0 hako ls
has 'no assets registered'

# ---- start --until-usec: the run stops at its stop time; start says so however soon it ends ----
stopped_at_3ms() { hako status | grep -q '^status=stopped$'; }
"$WRITER" "$PDUDEF" >"$tmp/writer2.out" 2>&1 &
wpid=$!
"$READER" "$PDUDEF" >"$tmp/reader2.out" 2>&1 &
rpid=$!
pids+=("$wpid" "$rpid")
until_ok 5 both_registered || exit 1
expect 0 hako start --until-usec 3000
has "^domain '$D': stopped -> running( -> (stopping|stopped) at world time 0\.00[0-3] s: the run is over)?$"
until_ok 5 stopped_at_3ms || exit 1
expect 0 hako status
has '^world time +0\.003 s'
expect 2 hako stop --until-usec 5
has 'until-usec is an option of start'
expect 0 hako reset
for p in "$wpid" "$rpid"; do
	wait "$p" || {
		echo "FAIL: asset process $p exited non-zero after the run to 3 ms"
		fails=$((fails + 1))
	}
done
out=$(cat "$tmp/writer2.out")
has '^\[writer\] done: 3 steps'

# ---- the conductor stops on SIGINT and removes the segment ----
kill -INT "$cpid"
wait "$cpid"
crc=$?
out=$(cat "$tmp/conductor.out")
if [ "$crc" -ne 0 ]; then
	echo "FAIL: the conductor exited $crc on SIGINT"
	fails=$((fails + 1))
fi
has "^hako-cmd: conductor of domain '$D' running \(pid $cpid, delta 1000 us"
has "^hako-cmd: conductor of domain '$D' stopped by SIGINT .*segment removed$"
expect 1 hako status
has "no domain '$D'"

# ---- a dead conductor leaves a segment that clean removes ----
"$HAKO_CMD" conductor -q >/dev/null 2>&1 &
kpid=$!
pids+=("$kpid")
until_ok 5 hako status || exit 1
{
	kill -KILL "$kpid"
	wait "$kpid"
} 2>/dev/null # no "Killed" notice from the shell
expect 0 hako status
has "conductor +pid $kpid, DEAD"
expect 1 hako start
has "cannot start: the conductor of domain '$D' \(pid $kpid\) is not running"
expect 0 hako clean
has "^domain '$D' removed"
expect 1 hako status

# ---- planted and corrupted segments: a clear error naming the segment, never a crash ----
seg=/dev/shm/hako.$D

# gone SITUATION: the segment was removed.
gone() {
	if [ -e "$seg" ]; then
		echo "FAIL: $seg is still there $1"
		fails=$((fails + 1))
		rm -f "$seg"
	fi
}

# dead_conductor: a valid segment of $D whose conductor was killed.
dead_conductor() {
	"$HAKO_CMD" conductor -q >/dev/null 2>&1 &
	local p=$!
	pids+=("$p")
	until_ok 5 hako status || exit 1
	{
		kill -KILL "$p"
		wait "$p"
	} 2>/dev/null
}

yes 'planted garbage, not a hako segment' | head -c 4096 >"$seg"
for c in status ls info; do
	# Exit status 1, not 128 + a signal.
	expect 1 hako "$c"
	has "domain '$D': /dev/shm/hako\.$D is not a segment of this hako version \(bad magic\)"
done
expect 1 hako start
has "/dev/shm/hako\.$D is not a segment"
expect 0 hako clean
has "^domain '$D' removed \(/dev/shm/hako\.$D\)$"
gone "after clean of a garbage segment"
yes 'planted garbage, not a hako segment' | head -c 4096 >"$seg"
expect 0 hako clean --force
has "^domain '$D' removed"
gone "after clean --force of a garbage segment"

# A live conductor's segment whose header names another domain (found by its name, so no
# layout offset is written down here).
"$HAKO_CMD" conductor -q >/dev/null 2>&1 &
cpid=$!
pids+=("$cpid")
until_ok 5 hako status || exit 1
off=$(grep -obUa -- "$D" "$seg" | head -n 1 | cut -d: -f1)
if [ -z "$off" ]; then
	echo "FAIL: the domain name is not in $seg"
	fails=$((fails + 1))
else
	printf 'X' | dd of="$seg" bs=1 seek="$off" conv=notrunc status=none
	expect 1 hako ls
	has "domain '$D': /dev/shm/hako\.$D is corrupted .*remove it with: hako-cmd clean"
	expect 1 hako status
	has "/dev/shm/hako\.$D is corrupted"
	expect 1 env HAKO_LOG=error "$HAKO_CMD" info
	has "/dev/shm/hako\.$D is corrupted: it names another domain \('X"
	expect 0 hako clean
	has "^domain '$D' removed"
	gone "after clean of a segment naming another domain"
fi
{
	kill -KILL "$cpid"
	wait "$cpid"
} 2>/dev/null

# A segment cut short (its conductor is dead: a live one would fault on the missing pages).
dead_conductor
truncate -s 4096 "$seg"
expect 1 hako status
has "/dev/shm/hako\.$D is corrupted"
expect 1 env HAKO_LOG=error "$HAKO_CMD" ls
has "is corrupted: the header says [0-9]+ bytes but the segment has 4096"
expect 0 hako clean
has "^domain '$D' removed"
gone "after clean of a truncated segment"

# A segment of another user: refused, and clean leaves it to --force (root only: chown).
if [ "$(id -u)" -eq 0 ]; then
	dead_conductor
	chown 65534 "$seg"
	expect 1 hako status
	has "/dev/shm/hako\.$D is owned by uid 65534, not by you \(uid 0\)"
	expect 1 hako clean
	has "belongs to another user; remove it anyway with: hako-cmd clean --force"
	if [ ! -e "$seg" ]; then
		echo "FAIL: clean removed a segment of another user"
		fails=$((fails + 1))
	fi
	expect 0 env HAKO_ALLOW_FOREIGN_DOMAIN=1 "$HAKO_CMD" status
	has '^status=stopped$'
	expect 0 hako clean --force
	has "^domain '$D' removed"
	gone "after clean --force of a segment of another user"
fi

if [ "$fails" -ne 0 ]; then
	echo "tools.hako_cmd: $fails check(s) failed"
	exit 1
fi
echo "tools.hako_cmd: all checks passed"
