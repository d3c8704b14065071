#!/bin/bash
# The whole forklift demo as a test: hako-launch runs the two hosts, the controller and the
# report (4 processes) as fast as possible for 56 s of simulated time (5 mission loops, at least
# 10 hand-offs), in a domain of its own (launch-<pid>) and a temporary folder. Passes only if
# hako-launch exits 0 and the report says: continuity exact for every step, hako-rd check ok,
# at least 10 hand-offs, and the SVG path as its last line.
#
# usage: test_forklift_run.sh BUILD_DIR
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../../test/common/hako_test.sh"

build=$(cd "$1" && pwd)
launch=$build/bin/hako-launch
bin=$build/samples/forklift
stop_usec=56000000
steps=$((stop_usec / 1000))

dir=$(mktemp -d /tmp/test-forklift-run-XXXXXX) || exit 1

# On any failure, the end of what hako-launch printed.
cleanup() {
	[ "$fails" -eq 0 ] || show "$dir/out.txt" 40
	rm -rf "$dir"
}
trap cleanup EXIT

cat >"$dir/launch.json" <<EOF
{
  "conductor": {"delta_usec": 1000, "max_delay_usec": 50000, "real_time_factor": 0,
                "stop_at_usec": $stop_usec},
  "log_dir": "$dir/logs",
  "path": ["$bin"],
  "processes": [
    {"name": "forklift-1", "command": "forklift-host",
     "args": ["--node", "1", "--out", "\${HAKO_LAUNCH_LOG_DIR}"],
     "wait_for": {"asset": "forklift-1"}},
    {"name": "forklift-2", "command": "forklift-host",
     "args": ["--node", "2", "--out", "\${HAKO_LAUNCH_LOG_DIR}"],
     "wait_for": {"asset": "forklift-2"}},
    {"name": "controller", "command": "forklift-controller", "args": ["--every-usec", "10000000"],
     "wait_for": {"log": "mission sent"}},
    {"name": "report", "command": "forklift-report", "args": ["--dir", "\${HAKO_LAUNCH_LOG_DIR}"],
     "phase": "after"}
  ]
}
EOF

unset HAKO_DOMAIN
"$launch" "$dir/launch.json" >"$dir/out.txt" 2>&1
rc=$?
[ "$rc" -eq 0 ] || die "hako-launch exited with $rc"

summary=$dir/logs/forklift-summary.json
[ -f "$summary" ] || die "no $summary"
# The top-level keys come first (the report writes them in this order).
value() {
	sed -n "s/^  \"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$summary" | head -n 1
}
check_ok=$(sed -n 's/^    "ok": \(true\|false\),$/\1/p' "$summary")
violations=$(sed -n 's/^    "violations": \([0-9]*\),$/\1/p' "$summary")

[ "$(value continuity)" = exact ] || fail "continuity is '$(value continuity)': $(value first_mismatch)"
[ "$(value steps)" = "$steps" ] || fail "the run has $(value steps) model steps, not $steps"
[ "$(value identical_steps)" = "$steps" ] || fail "$(value identical_steps) identical steps"
[ "$check_ok" = true ] || fail "hako-rd check failed ($violations violations)"
[ "$violations" = 0 ] || fail "hako-rd check: $violations violations"
handoffs=$(value handoffs)
[ "${handoffs:-0}" -ge 10 ] || fail "only ${handoffs:-0} hand-offs (want >= 10)"
[ "$(value reclaims)" = 0 ] || fail "$(value reclaims) reclaims in a healthy run"

grep -q "continuity     exact: $steps of $steps steps identical" "$dir/out.txt" ||
	fail "the report does not say continuity exact"
grep -q "hako-rd check  ok" "$dir/out.txt" || fail "the report does not say hako-rd check ok"
n=$(grep -c "\] t=[0-9.]* s  hand-off [12] -> [12]  epoch [0-9]*  x=" "$dir/out.txt")
[ "$n" -eq "$handoffs" ] || fail "$n hand-off lines for $handoffs hand-offs"
svg=$(grep '^\[report\] ' "$dir/out.txt" | tail -n 1 | sed 's/^\[report\] //')
[ "$svg" = "$dir/logs/forklift-x.svg" ] || fail "the report's last line is '$svg', not the SVG path"
grep -q '</svg>' "$svg" || fail "$svg is not a whole SVG"
lines=$(wc -l <"$dir/logs/forklift-trace.csv")
[ "$lines" -eq $((steps + 1)) ] || fail "forklift-trace.csv has $lines lines"

[ "$fails" -ne 0 ] || echo "ok: $handoffs hand-offs, continuity exact over $steps steps, hako-rd check ok"
finish samples.forklift.run
