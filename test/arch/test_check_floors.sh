#!/bin/bash
# arch.floors_planted: check_floors.sh fails on violations planted in a copy of the library
# folders, naming each file and line, and says nothing of what is allowed (a link or an include
# of a lower floor) planted with them. So arch.floors passing means something.
#
# usage: test_check_floors.sh SOURCE_DIR
set -u
src=${1:?usage: test_check_floors.sh SOURCE_DIR}
check=$(dirname "${BASH_SOURCE[0]}")/check_floors.sh
tmp=$(mktemp -d /tmp/hako-floors-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

for d in base registry core pdu-endpoint pdu-bridge conductor rd viewer; do
	cp -r "$src/$d" "$tmp/" || exit 1
done
out=$("$check" "$tmp" 2>&1) || fail "the copy of the tree does not pass: $out"

# Violations, each at a line of its own.
printf '/* planted */\n#include "hako/endpoint.h"\n' >"$tmp/core/src/planted.c"
printf '#include <hako/rd.h>\n' >"$tmp/registry/src/planted.h"
printf '#include "hako/nowhere.h"\n' >>"$tmp/pdu-bridge/src/bridge.c"
n=$(wc -l <"$tmp/pdu-endpoint/CMakeLists.txt")
printf 'target_link_libraries(hako_endpoint_objs PRIVATE\n  m hako_bridge) # planted\n' \
	>>"$tmp/pdu-endpoint/CMakeLists.txt"
endpoint_line=$((n + 2))
n=$(wc -l <"$tmp/rd/CMakeLists.txt")
printf 'hako_link_library(rd PRIVATE hako_cli)\n' >>"$tmp/rd/CMakeLists.txt"
rd_line=$((n + 1))
mkdir "$tmp/base/tools"
printf '# planted\nadd_executable(planted planted.c)\n' >"$tmp/base/tools/CMakeLists.txt"
printf '#include "hako/log.h"\n\nint main(void)\n{\n\treturn 0;\n}\n' >"$tmp/base/tools/planted.c"
# Allowed: lower floors.
printf 'target_link_libraries(hako_viewer_internal PUBLIC hako_conductor hako_kit)\n' \
	>>"$tmp/viewer/CMakeLists.txt"
printf '#include "hako/domain.h"\n#include "hako/msgs/hako_msgs/SimTime.h"\n#include "hakoi/cfg.h"\n' \
	>>"$tmp/pdu-bridge/src/bridge.c"

out=$("$check" "$tmp" 2>&1)
rc=$?
[ "$rc" = 1 ] || fail "exit $rc with violations planted, not 1"
b=$(wc -l <"$src/pdu-bridge/src/bridge.c")
floors="(floors: base registry core pdu-endpoint pdu-bridge conductor rd viewer)"
want=(
	"$tmp/core/src/planted.c:2: core includes hako/endpoint.h of pdu-endpoint, which is not below it $floors"
	"$tmp/registry/src/planted.h:1: registry includes hako/rd.h of rd, which is not below it $floors"
	"$tmp/pdu-bridge/src/bridge.c:$((b + 1)): pdu-bridge includes hako/nowhere.h, which is no library's public header"
	"$tmp/pdu-endpoint/CMakeLists.txt:$endpoint_line: pdu-endpoint links hako_bridge of pdu-bridge, which is not below it $floors"
	"$tmp/rd/CMakeLists.txt:$rd_line: rd links hako_cli, which is no library $floors"
	"$tmp/base/tools/CMakeLists.txt:2: a program inside the library folder base/ (programs go to tools/<name>/)"
	"$tmp/base/tools/planted.c:3: a main() inside the library folder base/ (programs go to tools/<name>/)"
	"arch.floors: 7 violation(s)"
)
# check_floors.sh runs in the tree it checks: its paths are relative to it.
out=${out//"$tmp/"/}
for w in "${want[@]}"; do
	w=${w//"$tmp/"/}
	grep -qxF -- "$w" <<<"$out" || fail "not said: $w"
done
[ "$(wc -l <<<"$out")" = "${#want[@]}" ] || fail "said more than the planted violations"
if [ "$fails" -gt 0 ]; then
	echo "check_floors.sh said:"
	echo "$out"
	exit 1
fi
echo "ok: the $((${#want[@]} - 1)) planted violations are named, nothing else"
