#!/bin/bash
# viewer.browser: hako-viewer shows the hello sample in a real (headless) Chromium: both assets
# are listed, the world time advances from one look to the next, and the counter the page shows
# is the one hako-cmd reads from the channel. Saves a screenshot in the build tree.
#
# usage: test_browser.sh BUILD_DIR SOURCE_DIR SCREENSHOT
set -u
BIN=$1 SRC=$2 SHOT=$3 NAME=viewer-browser
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/common/hako_test.sh"
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/viewer/viewer_kit.sh"

start_sample
start_viewer
run_sample
start_chromium
URL="http://127.0.0.1:$VPORT/"

page "$URL" "!!document.querySelector('tr[data-asset=\"writer\"]') &&
	!!document.querySelector('tr[data-asset=\"reader\"]') &&
	Number(document.getElementById('world-time').dataset.usec) > 0" "$tmp/dom1.html" ||
	die "the page never listed both assets with a world time"
file_has "$tmp/dom1.html" 'data-asset="writer"'
file_has "$tmp/dom1.html" 'data-asset="reader"'
file_has "$tmp/dom1.html" 'data-state="running"'
t1=$(usec "$tmp/dom1.html")
[ -n "$t1" ] || die "no world time in the first look"

page "$URL" "Number(document.getElementById('world-time').dataset.usec) > $t1" "$tmp/dom2.html" ||
	fail "the world time never passed $t1 us"
t2=$(usec "$tmp/dom2.html")
[ -n "$t2" ] && [ "$t2" -gt "$t1" ] || fail "world time did not advance: $t1 us, then '$t2' us"
echo "world time seen: $t1 us, then $t2 us"

# Stop, so that the counter holds still, and read it independently of the viewer.
"$HAKO_CMD" stop >/dev/null || die "hako-cmd stop failed"
value=$("$HAKO_CMD" pdu --pdudef "$PDUDEF" --json Robot 0 | tr -d ' \n')
[[ "$value" =~ ^\{\"data\":[1-9][0-9]*\}$ ]] || die "hako-cmd pdu read '$value'"
echo "hako-cmd pdu Robot 0: $value"
page "$URL" "document.getElementById('state').dataset.state === 'stopped' &&
	(document.querySelector('td.value[data-key=\"Robot/0\"]') || {}).textContent === '$value'" \
	"$tmp/dom3.html" "$SHOT" || fail "the page never showed Robot/0 = $value"
file_has "$tmp/dom3.html" "data-key=\"Robot/0\">\\{\"data\":${value//[^0-9]/}\\}<"
head -c 8 "$SHOT" | od -An -c | grep -q 'P   N   G' || fail "no PNG screenshot at $SHOT"
echo "screenshot: $SHOT"
grep -q 'refused' "$tmp/viewer.err" && fail "the viewer refused something: $(cat "$tmp/viewer.err")"
finish viewer.browser
