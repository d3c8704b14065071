#!/bin/bash
# viewer.browser_rd: the viewer's RD view against a real RD config, the fleet's zones: two
# fleet-host processes share 32 drones (west, node 1, below x = 0; east, node 2, above), run by
# hako-launch, whose "viewer" starts hako-viewer with --rd and --pdudef. In a headless Chromium,
# the map shows every drone coloured by the node that owns it (both nodes, one colour each) and
# the dashboard's hand-off timeline lists hand-offs between the nodes. Saves a screenshot of the
# map in the build tree.
#
# usage: test_browser_rd.sh BUILD_DIR SOURCE_DIR SCREENSHOT [DASHBOARD_SCREENSHOT]
set -u
BIN=$1 SRC=$2 SHOT=$3 SHOT2=${4:-} NAME=viewer-rd
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/common/hako_test.sh"
# shellcheck source-path=SCRIPTDIR
. "$SRC/test/viewer/viewer_kit.sh"
DRONES=32

start_fleet $DRONES 1 120000000
wait_for_line "$tmp/launch.out" '^hako-launch: simulation running' 30 ||
	die "the fleet did not start"
URL=$(sed -n 's/^hako-launch: viewer: \(http[^ ]*\) (read-only), .*/\1/p' "$tmp/launch.out")
[ -n "$URL" ] || die "hako-launch printed no viewer URL"
start_chromium

# The map: one circle a drone (its pos, not its velocity), each with the owner of its EU, both
# nodes present, one colour per node and the two colours different.
colours="(() => {
	const c = [...document.querySelectorAll('#map circle')];
	const fill = {};
	for (const e of c) (fill[e.dataset.owner] = fill[e.dataset.owner] || new Set()).add(e.getAttribute('fill'));
	return c.length === $DRONES && c.every((e) => e.dataset.owner === '1' || e.dataset.owner === '2') &&
		fill['1'] && fill['2'] && fill['1'].size === 1 && fill['2'].size === 1 &&
		[...fill['1']][0] !== [...fill['2']][0];
})()"
page "$URL?view=map" "$colours && (window.n = (window.n || 0) + 1) > 20" "$tmp/map.html" "$SHOT" ||
	fail "the map never showed $DRONES drones coloured by their two owner nodes"
n1=$(grep -o 'data-owner="1"' "$tmp/map.html" | wc -l)
n2=$(grep -o 'data-owner="2"' "$tmp/map.html" | wc -l)
echo "map: $n1 drones of node 1, $n2 of node 2"
[ "$n1" -gt 0 ] && [ "$n2" -gt 0 ] && [ $((n1 + n2)) -eq $DRONES ] ||
	fail "map: $n1 drones of node 1 and $n2 of node 2, expected both > 0 and $DRONES in all"
grep -q 'data-key="Drone-[0-9]*/5"' "$tmp/map.html" && fail "map: a velocity channel is drawn as a position"
file_has "$tmp/map.html" '\(node 1\) x '
file_has "$tmp/map.html" '\(node 2\) x '
head -c 8 "$SHOT" | od -An -c | grep -q 'P   N   G' || fail "no PNG screenshot at $SHOT"

# The dashboard: every EU with its owner, and hand-offs between the nodes in the timeline
# (drones cross x = 0 as they fly); the screenshot shows that part of the page.
page "$URL" "document.querySelectorAll('#eus tbody tr').length === $DRONES &&
	document.querySelectorAll('#handoffs li[data-from=\"1\"][data-to=\"2\"]').length > 0 &&
	document.querySelectorAll('#handoffs li[data-from=\"2\"][data-to=\"1\"]').length > 0 &&
	(document.getElementById('handoffs').previousElementSibling.scrollIntoView(), true)" \
	"$tmp/dash.html" "$SHOT2" || fail "the dashboard never listed hand-offs both ways"
h12=$(grep -o '<li data-from="1" data-to="2"' "$tmp/dash.html" | wc -l)
h21=$(grep -o '<li data-from="2" data-to="1"' "$tmp/dash.html" | wc -l)
echo "hand-off timeline: $h12 from node 1 to 2, $h21 from node 2 to 1"
[ "$h12" -gt 0 ] && [ "$h21" -gt 0 ] || fail "hand-offs: $h12 (1 -> 2), $h21 (2 -> 1)"
file_has "$tmp/dash.html" '<li data-from="[12]" data-to="[12]">[0-9.]+ s: drone-[0-9]+ node [12] → node [12] \(epoch [0-9]+\)</li>'
file_has "$tmp/dash.html" '<tr data-eu="drone-1">'
grep -q 'refused' "$tmp/logs/viewer.log" && fail "the viewer refused something: $(cat "$tmp/logs/viewer.log")"
echo "screenshot: $SHOT"
finish viewer.browser_rd
