#!/bin/bash
# viewer.browser_control: the page stops the simulation only with the token. Without a token
# and with a wrong one the request is refused (the page says so, the viewer logs it, the domain
# runs on); with the token printed by hako-viewer the domain stops; the page's reset button
# then resets it.
#
# usage: test_browser_control.sh BUILD_DIR SOURCE_DIR
set -u
BIN=$1 SRC=$2 NAME=viewer-control
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/common/hako_test.sh"
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/viewer/viewer_kit.sh"

start_sample
start_viewer
run_sample
start_chromium
URL="http://127.0.0.1:$VPORT/"
REPLIED="document.getElementById('control-reply').dataset.ok !== ''"

page "$URL?action=stop" "$REPLIED" "$tmp/notoken.html" || die "no reply to a stop without token"
file_has "$tmp/notoken.html" 'id="control-reply" data-ok="false" data-cmd="stop">stop: refused: no token<'
file_has "$tmp/notoken.html" 'read-only'
file_has "$tmp/viewer.err" 'refused stop from 127\.0\.0\.1: no token'
is_state running || fail "the domain left running after a refused stop"

page "$URL?token=0123456789abcdef0123456789abcdef&action=stop" "$REPLIED" "$tmp/badtoken.html" ||
	die "no reply to a stop with a bad token"
file_has "$tmp/badtoken.html" 'data-ok="false" data-cmd="stop">stop: refused: bad token<'
file_has "$tmp/viewer.err" 'refused stop from 127\.0\.0\.1: bad token'
is_state running || fail "the domain left running after a stop with a bad token"
grep -q "$TOKEN" "$tmp/viewer.err" && fail "the viewer logged its token"

page "$URL?token=$TOKEN&action=stop" "$REPLIED" "$tmp/stop.html" || die "no reply to a stop"
file_has "$tmp/stop.html" 'data-ok="true" data-cmd="stop">stop: ok<'
until_ok 10 is_state stopped || fail "the domain did not stop"
file_has "$tmp/viewer.err" 'stop from 127\.0\.0\.1: requested'

# The reset button itself, clicked once the page is connected and shows the stopped state.
page "$URL?token=$TOKEN" "(document.getElementById('state').dataset.state === 'stopped' &&
	!window.clicked && (document.getElementById('btn-reset').click(), window.clicked = true),
	document.getElementById('control-reply').dataset.cmd === 'reset')" "$tmp/reset.html" ||
	fail "no reply to the reset button"
file_has "$tmp/reset.html" 'data-ok="true" data-cmd="reset">reset: ok<'
until_ok 10 grep -q 'reset' "$tmp/writer.log" || fail "the writer never saw the reset"
finish viewer.browser_control
