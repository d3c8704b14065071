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
name=run
stop_usec=56000000
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/forklift_kit.sh"

forklift_launch '{"name": "controller", "command": "forklift-controller",
     "args": ["--every-usec", "10000000"], "wait_for": {"log": "mission sent"}}'

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

report_continuity_exact
grep -q "hako-rd check  ok" "$dir/out.txt" || fail "the report does not say hako-rd check ok"
n=$(handoff_lines)
[ "$n" -eq "$handoffs" ] || fail "$n hand-off lines for $handoffs hand-offs"
svg=$(grep '^\[report\] ' "$dir/out.txt" | tail -n 1 | sed 's/^\[report\] //')
[ "$svg" = "$dir/logs/forklift-x.svg" ] || fail "the report's last line is '$svg', not the SVG path"
grep -q '</svg>' "$svg" || fail "$svg is not a whole SVG"
lines=$(wc -l <"$dir/logs/forklift-trace.csv")
[ "$lines" -eq $((steps + 1)) ] || fail "forklift-trace.csv has $lines lines"

[ "$fails" -ne 0 ] || echo "ok: $handoffs hand-offs, continuity exact over $steps steps, hako-rd check ok"
finish samples.forklift.run
