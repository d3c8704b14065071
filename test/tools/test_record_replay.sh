#!/bin/bash
# tools.record_replay: hako-record and hako-replay on the hello assets (samples/hello), each run
# under hako-launch in a domain of its own: the counts add up to the writes, filters, rate
# decimation, drops (a tiny buffer and a stalled writer thread), SIGINT and a reset by hand, bad
# arguments, a corrupt and a cut-off file, and a replay read back by record-probe value for value
# against the file's own messages, twice the same, with a robot remapped.
#
# usage: test_record_replay.sh BIN_DIR HELLO_WRITER HELLO_READER RECORD_PROBE HELLO_PDUDEF
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../test/common/hako_test.sh"

BIN=$1
WRITER=$2
READER=$3
PROBE=$4
PDUDEF=$5
REC=$BIN/hako-record
REP=$BIN/hako-replay
LAUNCH=$BIN/hako-launch
CMD=$BIN/hako-cmd
unset HAKO_PDUDEF HAKO_CORE_CONFIG HAKO_LOG HAKO_DOMAIN
tmp=$(mktemp -d)
pids=()
domains=()

cleanup() {
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	wait 2>/dev/null
	for d in "${domains[@]}"; do
		HAKO_DOMAIN=$d "$CMD" clean --force >/dev/null 2>&1
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

n=0
# hello_run NAME RTF STOP_USEC REC_ARGS...: the hello writer and reader under hako-launch with
# hako-record started first (its args as given), until the stop time; its output in $tmp/NAME.out.
hello_run() {
	local name=$1 rtf=$2 stop=$3
	shift 3
	n=$((n + 1))
	local dom="rec-test-$$-$n" args="" a
	domains+=("$dom")
	for a in "$@"; do
		args+="\"$a\", "
	done
	cat >"$tmp/$name.json" <<EOF
{
  "domain": "$dom",
  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "real_time_factor": $rtf,
                "stop_at_usec": $stop},
  "log_dir": "$tmp/logs-$name",
  "processes": [
    {"name": "rec", "command": "$REC", "args": [${args} "--pdudef", "$PDUDEF", "--until-stop"],
     "wait_for": {"log": "recording domain"}},
    {"name": "writer", "command": "$WRITER", "wait_for": {"asset": "writer"}},
    {"name": "reader", "command": "$READER", "wait_for": {"asset": "reader"}}
  ]
}
EOF
	"$LAUNCH" --quiet --no-echo "$tmp/$name.json" >"$tmp/$name.out" 2>&1 ||
		{ fail "$name: hako-launch failed"; show "$tmp/$name.out"; }
	done_line=$(grep 'hako-record: done' "$tmp/logs-$name/rec.log")
}

# field WORD: the number before WORD in $done_line ("12 missed" -> 12).
field() {
	sed -E "s/.* ([0-9]+) $1.*/\1/" <<<"$done_line"
}

# ---- bad arguments ----
expect 2 "$REC"
has 'no output file given'
expect 2 "$REC" -o x.mcap --rate-hz fast
has 'rate-hz fast: expected a number'
expect 2 "$REC" -o x.mcap --pdu 'Robot:x'
has 'expected ROBOT/NAME'
expect 2 "$REC" -o x.mcap --type std_msgs/UInt64
has '--type needs --pdudef'
expect 2 "$REC" -o x.mcap --compression bz2
has 'expected zstd, lz4 or none'
expect 2 "$REC" -o x.mcap --cpu-budget fast
has 'cpu-budget fast: expected auto or'
expect 2 "$REP"
has 'no recording given'
expect 2 "$REP" --remap Robot x.mcap
has 'expected OLD=NEW'
expect 2 "$REP" --speed 0 x.mcap
has 'speed 0: expected'
expect 1 "$REC" -d "rec-test-$$-none" -o "$tmp/none.mcap" --wait-ms 0
has "domain 'rec-test-$$-none'"

# ---- a whole run: every write recorded, missed or dropped; the file reads back ----
# (--until-stop: the run's stop waits for the recorder's last look, so every write is counted
# even when the recorder is late on a loaded machine; --wake-on-write, nice 0: few are missed)
hello_run full 2 1000000 -o "$tmp/full.mcap" --chunk-kb 4 --wake-on-write --nice 0
rec=$(field messages)
sum=$(($(field messages) + $(field missed) + $(field dropped) + $(field decimated)))
same "full: recorded + missed + dropped + decimated = the writer's writes" "$sum" 1000
[ "$rec" -gt 0 ] || fail "full: nothing recorded: $done_line"
grep -q '1 channels' <<<"$done_line" || fail "full: not 1 channel: $done_line"
expect 0 "$REP" --check "$tmp/full.mcap"
has 'indexed, 1 channels \(1 replayed\), 1 schemas'
has "^hako-replay: $rec messages would be written, 0 read errors"

# ---- the automatic budget: a paced run of 4 s ----
# (what it sees of the writes depends on the machine's load; that it counts them all, and that it
# measured the world and said so, must not. Not on idle CPU time here: beside two busy
# processes an idle-class recorder may not run for the 1.5 s a decision takes)
hello_run auto 1 4000000 -o "$tmp/auto.mcap" --cpu-budget auto
sum=$(($(field messages) + $(field missed) + $(field dropped) + $(field decimated)))
[ "$sum" -le 4000 ] && [ "$sum" -ge 3900 ] || fail "auto: $sum writes counted of 4000: $done_line"
[ "$(field messages)" -gt 0 ] || fail "auto: nothing recorded: $done_line"
grep -q 'automatic budget: .* CPUs on average over [1-9]' "$tmp/logs-auto/rec.log" ||
	{ fail "auto: no budget line"; show "$tmp/logs-auto/rec.log"; }
expect 0 "$REP" --check "$tmp/auto.mcap"

# ---- filters ----
hello_run f_robot 0 100000 -o "$tmp/f1.mcap" --robot Nope --idle
grep -q ' 0 messages on 0 channels' <<<"$done_line" || fail "--robot Nope: $done_line"
hello_run f_pdu 0 100000 -o "$tmp/f2.mcap" --pdu Robot/counter
grep -q 'on 1 channels' <<<"$done_line" || fail "--pdu Robot/counter: $done_line"
hello_run f_id 0 100000 -o "$tmp/f3.mcap" --pdu Robot:0
grep -q 'on 1 channels' <<<"$done_line" || fail "--pdu Robot:0: $done_line"
hello_run f_type 0 100000 -o "$tmp/f4.mcap" --type geometry_msgs/Twist
grep -q 'on 0 channels' <<<"$done_line" || fail "--type geometry_msgs/Twist: $done_line"
hello_run f_type2 0 100000 -o "$tmp/f5.mcap" --type std_msgs/UInt64
grep -q 'on 1 channels' <<<"$done_line" || fail "--type std_msgs/UInt64: $done_line"

# ---- rate decimation: 100 Hz of world time over 1 s ----
hello_run rate 2 1000000 -o "$tmp/rate.mcap" --rate-hz 100 --wake-on-write --nice 0
rec=$(field messages)
sum=$(($(field messages) + $(field missed) + $(field dropped) + $(field decimated)))
same "rate: recorded + missed + dropped + decimated" "$sum" 1000
# (how many writes it sees depends on the machine's load; what it records of them must not)
[ "$rec" -le 101 ] && [ "$rec" -ge 1 ] || fail "rate: $rec messages at 100 Hz over 1 s: $done_line"
[ "$(field decimated)" -gt 0 ] || fail "rate: none decimated: $done_line"
hello_run prate 2 1000000 -o "$tmp/prate.mcap" --pdu-rate Robot/counter=10 --rate-hz 500
rec=$(field messages)
[ "$rec" -le 11 ] && [ "$rec" -ge 1 ] || fail "--pdu-rate 10 Hz over 1 s: $done_line"

# ---- drops: a 10 KiB buffer the writer thread does not empty until the end ----
# (paced at the wall clock, at nice 0: the sampler sees more writes than the buffer holds)
hello_run drop 1 500000 -o "$tmp/drop.mcap" --buffer-mb 0.01 --test-stall-writer --wake-on-write \
	--nice 0
sum=$(($(field messages) + $(field missed) + $(field dropped) + $(field decimated)))
same "drop: recorded + missed + dropped + decimated" "$sum" 500
[ "$(field dropped)" -gt 0 ] && [ $(($(field messages) + $(field dropped))) -gt 256 ] ||
	fail "drop: the buffer never filled: $done_line"
[ "$(field messages)" -le 256 ] || fail "drop: more recorded than the buffer holds: $done_line"
expect 0 "$REP" --check "$tmp/drop.mcap"
has "^hako-replay: $(field messages) messages would be written"

# ---- by hand: SIGINT ends the recording with a whole file; a reset in between ----
dom="rec-test-$$-hand"
domains+=("$dom")
export HAKO_DOMAIN=$dom
"$CMD" conductor --delta-usec 1000 --max-delay-usec 1000 --real-time-factor 4 >"$tmp/cond.log" 2>&1 &
pids+=($!)
until_ok 10 "$CMD" status
"$WRITER" >"$tmp/w.log" 2>&1 &
pids+=($!)
until_ok 10 grep -q registered "$tmp/w.log"
"$REC" -o "$tmp/sig.mcap" --pdudef "$PDUDEF" >"$tmp/sig.log" 2>&1 &
rec_pid=$!
pids+=($rec_pid)
wait_for_line "$tmp/sig.log" 'recording domain' 10
"$CMD" start >/dev/null
world_past() { # world time past $1 us
	local t
	t=$("$CMD" status | sed -nE 's/^world time +([0-9.]+) s.*/\1/p')
	awk -v t="$t" -v w="$1" 'BEGIN { exit !(t * 1e6 >= w) }'
}
until_ok 20 world_past 300000
"$CMD" stop >/dev/null
first_end=$("$CMD" status | sed -nE 's/^world time +([0-9.]+) s.*/\1/p')
"$CMD" reset >/dev/null
wait "${pids[1]}" # the hello writer ends at a reset: a new one for the second run
"$WRITER" >"$tmp/w2.log" 2>&1 &
pids+=($!)
until_ok 10 grep -q registered "$tmp/w2.log"
"$CMD" start >/dev/null
until_ok 20 world_past 100000
kill -INT "$rec_pid"
wait "$rec_pid"
same "hako-record's exit status after SIGINT" "$?" 0
file_has "$tmp/sig.log" 'done \(stopped by a signal\).* 1 resets'
expect 0 "$REP" --check "$tmp/sig.mcap"
has 'indexed'
last=$(sed -nE 's/.*log times [0-9.]+ s to ([0-9.]+) s/\1/p' <<<"$out")
awk -v l="$last" -v f="$first_end" 'BEGIN { exit !(l > f) }' ||
	fail "after the reset the log times do not go on: last $last s, first run ended at $first_end s"
"$CMD" stop >/dev/null 2>&1
"$CMD" reset >/dev/null 2>&1
unset HAKO_DOMAIN

# ---- damaged files ----
printf 'this is not an MCAP file at all, not even close' >"$tmp/bad.mcap"
expect 1 "$REP" --check "$tmp/bad.mcap"
has 'hako-replay: .*bad.mcap'
expect 1 "$REP" --check "$tmp/nothing-here.mcap"
size=$(stat -c %s "$tmp/full.mcap")
cp "$tmp/full.mcap" "$tmp/flip.mcap"
# Overwrite 64 bytes at every eighth of the file (chunks, indexes, the summary): errors that
# name their offset, the rest is read, no crash.
for k in 1 2 3 4 5 6 7; do
	printf '%064d' 0 | dd of="$tmp/flip.mcap" bs=1 seek=$((size * k / 8)) conv=notrunc status=none
done
# Those may all land in message indexes, which reading the chunks does not need (how the file is
# laid out depends on how many writes the follower saw). So also 64 bytes in the middle of the
# first chunk's records, found by walking the records (opcode u8, length u64): that the reader
# must notice (zstd or the chunk's CRC).
chunk=$(python3 - "$tmp/full.mcap" <<'PY'
import struct, sys
b = open(sys.argv[1], 'rb').read()
i = 8
while i + 9 <= len(b):
    op, n = b[i], struct.unpack_from('<Q', b, i + 1)[0]
    if op == 6:
        print(i + 9 + n // 2 if n >= 256 else '')
        break
    i += 9 + n
PY
)
[ -n "$chunk" ] || fail "no chunk of 256 bytes or more in $tmp/full.mcap"
printf '%064d' 0 | dd of="$tmp/flip.mcap" bs=1 seek="${chunk:-0}" conv=notrunc status=none
"$REP" --check "$tmp/flip.mcap" >"$tmp/flip.out" 2>&1
rc=$?
[ "$rc" -le 1 ] || { fail "hako-replay on a corrupt file exited $rc"; show "$tmp/flip.out"; }
file_has "$tmp/flip.out" 'offset [0-9]+'
head -c $((size * 2 / 3)) "$tmp/full.mcap" >"$tmp/cut.mcap"
expect 0 "$REP" --check "$tmp/cut.mcap"
has 'no summary: read from the start'
has 'skipped [0-9]+ bytes at offset [0-9]+: .*past the end of the file'
got=$(sed -nE 's/^hako-replay: ([0-9]+) messages would be written.*/\1/p' <<<"$out")
full=$("$REP" --check "$tmp/full.mcap" | sed -nE 's/^hako-replay: ([0-9]+) messages would.*/\1/p')
[ -n "$got" ] && [ "$got" -gt 0 ] && [ "$got" -lt "$full" ] ||
	fail "the cut file gave ${got:-no} messages (the whole one $full)"

# ---- replay: the channel holds at every step the last message of log time <= T ----
# replay_run NAME REPLAY_ARGS... : hako-replay and record-probe (reading ROBOT:0 once the replay
# passed T) in a fresh domain for 1 s; the probe's lines in $tmp/NAME.probe. The file:
# $REPLAY_FILE, else full.mcap.
replay_run() {
	local name=$1 robot=$2
	shift 2
	n=$((n + 1))
	local dom="rec-test-$$-$n" args="" a
	domains+=("$dom")
	for a in "$@"; do
		args+="\"$a\", "
	done
	cat >"$tmp/$name.json" <<EOF
{
  "domain": "$dom",
  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "stop_at_usec": 1000000},
  "log_dir": "$tmp/logs-$name",
  "processes": [
    {"name": "replay", "command": "$REP", "args": [${args} "${REPLAY_FILE:-$tmp/full.mcap}"],
     "wait_for": {"asset": "hako-replay"}},
    {"name": "probe", "command": "$PROBE",
     "args": ["--asset", "probe", "--after", "hako-replay", "--out", "$tmp/$name.probe", "$robot:0"],
     "wait_for": {"asset": "probe"}}
  ]
}
EOF
	"$LAUNCH" --quiet --no-echo "$tmp/$name.json" >"$tmp/$name.out" 2>&1 ||
		{ fail "$name: hako-launch failed"; show "$tmp/$name.out"; }
}
replay_run rep1 Robot
replay_run rep2 Robot
cmp -s "$tmp/rep1.probe" "$tmp/rep2.probe" || fail "two replays of one file read differently"
[ "$(wc -l <"$tmp/rep1.probe")" -eq 1000 ] || fail "the probe did not read 1000 steps"
# What the file says the channel holds after each step: the last message with log time <= T.
"$REP" --dump "$tmp/full.mcap" | grep -E '^[0-9]+ Robot:0 ' >"$tmp/dump.txt"
awk 'NR == FNR { t[NR] = $1; h[NR] = $3; n = NR; next }
     { while (i < n && t[i + 1] <= $1) i++; want = i ? h[i] : "0000000000000000";
       if ($4 != want) { bad++; if (bad <= 3) print "T=" $1 " read " $4 " want " want } }
     END { if (bad) { print bad " steps differ"; exit 1 } }' \
	"$tmp/dump.txt" "$tmp/rep1.probe" || fail "the replayed channel is not the file's at every step"
# --remap: the same values under another robot name.
replay_run remap Other --remap Robot=Other
sed 's/ Other:0 / Robot:0 /' "$tmp/remap.probe" | cmp -s - "$tmp/rep1.probe" ||
	fail "--remap Robot=Other: other values than the plain replay"
# --speed 2: at T the file's content at 2 T.
replay_run fast Robot --speed 2
awk 'NR == FNR { t[NR] = $1; h[NR] = $3; n = NR; next }
     { while (i < n && t[i + 1] <= 2 * $1) i++; want = i ? h[i] : "0000000000000000";
       if ($4 != want) bad++ }
     END { exit bad != 0 }' "$tmp/dump.txt" "$tmp/fast.probe" || fail "--speed 2: not the file at 2 T"
# --start-offset 0.5: at T the file's content at T + 0.5 s.
replay_run off Robot --start-offset 0.5
awk 'NR == FNR { t[NR] = $1; h[NR] = $3; n = NR; next }
     { while (i < n && t[i + 1] <= $1 + 500000) i++; want = i ? h[i] : "0000000000000000";
       if ($4 != want) bad++ }
     END { exit bad != 0 }' "$tmp/dump.txt" "$tmp/off.probe" || fail "--start-offset 0.5: not the file at T + 0.5 s"
# --loop --speed 3: the 1 s file three times over in 1 s of world time
replay_run loop Robot --loop --speed 3
written=$(sed -nE 's/.*hako-replay: done: ([0-9]+) messages written.*/\1/p' "$tmp/logs-loop/replay.log")
[ -n "$written" ] && [ "$written" -ge $((2 * full)) ] ||
	fail "--loop --speed 3: ${written:-no} messages written, the file has $full"
# the cut file replays its whole chunks and says what it skipped
REPLAY_FILE=$tmp/cut.mcap replay_run cut Robot
file_has "$tmp/logs-cut/replay.log" 'skipped [0-9]+ bytes at offset [0-9]+'
file_has "$tmp/logs-cut/replay.log" "hako-replay: done: $got messages written"

# ---- "record" in a launch file: hako-record started first, the file in the log folder ----
n=$((n + 1))
domains+=("rec-test-$$-$n")
cat >"$tmp/launch-record.json" <<EOF
{
  "domain": "rec-test-$$-$n",
  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "real_time_factor": 4,
                "stop_at_usec": 300000},
  "log_dir": "$tmp/logs-launch-record",
  "record": {"pdudef": "$PDUDEF", "file": "run.mcap"},
  "processes": [{"name": "writer", "command": "$WRITER", "wait_for": {"asset": "writer"}}]
}
EOF
expect 0 "$LAUNCH" --no-echo "$tmp/launch-record.json"
has "record: $tmp/logs-launch-record/run.mcap"
done_line=$(grep 'hako-record: done' "$tmp/logs-launch-record/record.log")
sum=$(($(field messages) + $(field missed) + $(field dropped) + $(field decimated)))
# (a follower that polls may miss the last writes before the reset: not counted)
[ "$sum" -le 300 ] && [ "$(field messages)" -gt 0 ] || fail "launch record: $done_line"
expect 0 "$REP" --check "$tmp/logs-launch-record/run.mcap"
has "^hako-replay: $(field messages) messages would be written, 0 read errors"

finish tools.record_replay
