#!/bin/bash
# samples.forklift.record_replay: the forklift demo (two hosts, the controller, the report) run
# as fast as possible for 12 s with hako-record as a reader asset of pos, height and phase
# (--asset: at every world step it reads the three PDUs, as the controller does, and records
# each new write stamped with that step's time). Then the recording is replayed by hako-replay
# into a fresh domain of its own, and record-probe, a reader asset there, reads the same three
# PDUs at every step once the replay's clock has passed it. Passes when the run was healthy
# (continuity exact) and at every one of the 12000 steps the probe read, for each PDU, exactly
# the values the recorder read at that world time in the recorded run (the last recorded write
# at or before it), and a second replay reads the same.
#
# usage: test_forklift_record.sh BUILD_DIR RECORD_PROBE
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../../test/common/hako_test.sh"

build=$(cd "$1" && pwd)
probe=$2
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
name=record
stop_usec=12000000
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/forklift_kit.sh"

rec=$build/bin/hako-record
rep=$build/bin/hako-replay

forklift_launch '{"name": "controller", "command": "forklift-controller",
     "args": ["--every-usec", "10000000"], "wait_for": {"log": "mission sent"}},
    {"name": "recorder", "command": "'"$rec"'",
     "args": ["--asset", "recorder", "-o", "'"$dir"'/forklift.mcap",
              "--pdudef", "'"$src"'/forklift_pdudef.json", "--until-stop",
              "--pdu", "forklift/pos", "--pdu", "forklift/height", "--pdu", "forklift/phase"],
     "wait_for": {"asset": "recorder"}}'
report_continuity_exact
file_has "$dir/logs/recorder.log" 'hako-record: done \(the run ended\): [0-9]+ messages on 3 channels'
file_has "$dir/logs/recorder.log" ' 0 dropped'

# replay_probe N: the recording replayed into a fresh domain, probe lines in $dir/probe-N.txt.
replay_probe() {
	local dom="forklift-replay-$$-$1"
	cat >"$dir/replay-$1.json" <<JSON
{
  "domain": "$dom",
  "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "stop_at_usec": $stop_usec},
  "log_dir": "$dir/logs-replay-$1",
  "processes": [
    {"name": "replay", "command": "$rep", "args": ["$dir/forklift.mcap"],
     "wait_for": {"asset": "hako-replay"}},
    {"name": "probe", "command": "$probe",
     "args": ["--asset", "probe", "--after", "hako-replay", "--out", "$dir/probe-$1.txt",
              "forklift:1", "forklift:2", "forklift:3"],
     "wait_for": {"asset": "probe"}}
  ]
}
JSON
	"$launch" --quiet --no-echo "$dir/replay-$1.json" >>"$dir/out.txt" 2>&1 ||
		die "the replay $1 failed"
}
replay_probe 1
replay_probe 2
cmp -s "$dir/probe-1.txt" "$dir/probe-2.txt" || fail "two replays of the recording read differently"
"$rep" --dump "$dir/forklift.mcap" | grep -E '^[0-9]+ forklift:' >"$dir/dump.txt"
[ -s "$dir/dump.txt" ] || die "the recording holds no forklift messages"
lines=$(wc -l <"$dir/probe-1.txt")
[ "$lines" -eq $((3 * steps)) ] || fail "the probe read $lines values, not $((3 * steps))"
# At every step T and PDU: the value the recorder read last at or before T in the recorded run.
awk 'NR == FNR { k = $2; n[k]++; t[k, n[k]] = $1; h[k, n[k]] = $3; next }
     { k = $2; while (i[k] < n[k] && t[k, i[k] + 1] <= $1) i[k]++;
       want = i[k] ? h[k, i[k]] : "0000000000000000";
       if ($4 != want) { bad++; if (bad <= 5) print "T=" $1 " " k ": read " $4 ", recorded " want }
       else same++ }
     END { print same " values equal, " bad + 0 " differ"; exit bad != 0 }' \
	"$dir/dump.txt" "$dir/probe-1.txt" >"$dir/compare.txt" ||
	{ fail "the replay is not what was recorded"; show "$dir/compare.txt"; }
[ "$fails" -ne 0 ] || echo "ok: $(tail -n 1 "$dir/compare.txt") over $steps steps x 3 PDUs; $(wc -l <"$dir/dump.txt") messages recorded"
finish samples.forklift.record_replay
