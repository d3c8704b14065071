#!/bin/bash
# registry.msggen: hako-msggen on user types: errors, naming, heap budgets, and headers that
# compile as strict C11 (and C++ when a C++ compiler is at hand).
#
# usage: test_msggen.sh HAKO_MSGGEN CC REGISTRY_INCLUDE_DIR BASE_INCLUDE_DIR
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../test/common/hako_test.sh"

GEN=$1
CC=$2
INC=$3
BASE_INC=$4

unset HAKO_MSG_PATH HAKO_LOG
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

m=$tmp/msg
mkdir -p "$m/my_msgs" "$m/bad_msgs"
cat >"$m/my_msgs/Sample.msg" <<'EOF'
# a user type: nested built-in types, a keyword as a field name, arrays
std_msgs/Header header
geometry_msgs/Vector3 velocity
int32 default
bool[3] flags
string[2] labels
float64[] samples
Reading[] readings
EOF
cat >"$m/my_msgs/Reading.msg" <<'EOF'
uint8 channel
string unit
int16[] raw
EOF
# Same name as geometry_msgs/Twist: neither gets the Hako_Twist shorthand here.
cat >"$m/my_msgs/Twist.msg" <<'EOF'
float32 speed
EOF
cat >"$m/my_msgs/Nothing.msg" <<'EOF'
# no fields
EOF
cat >"$m/bad_msgs/Broken.msg" <<'EOF'
int32 ok
flaot64 value
EOF

# ---- usage and errors ----
expect 2 "$GEN"
has 'no types'
expect 0 "$GEN" --help
has '^usage: hako-msggen'
expect 0 "$GEN" -V
has '^hako-msggen [0-9]'
expect 2 "$GEN" --bogus
has "unknown option '--bogus'"
expect 2 "$GEN" --heap-budget nonsense geometry_msgs/Twist
has "is not PKG/TYPE=BYTES"
expect 2 "$GEN" --heap-budget my_msgs/Sample=-5 my_msgs/Sample
has "not a byte count"
expect 1 "$GEN" --out "$tmp/x" nosuch_msgs/Nothing
has 'nosuch_msgs/Nothing'
expect 1 "$GEN" -I "$m" --out "$tmp/x" bad_msgs/Broken
has 'bad_msgs/Broken\.msg:2:'
expect 1 "$GEN" -I "$m" --out "$tmp/x" --heap-budget my_msgs/Other=10 my_msgs/Sample
has 'not one of the types generated'

# ---- user types ----
out_dir=$tmp/gen
expect 0 "$GEN" -I "$m" --out "$out_dir" my_msgs/Sample my_msgs/Twist my_msgs/Nothing \
	geometry_msgs/Twist --heap-budget my_msgs/Sample=1000
for h in hako_pdu_types.h my_msgs/Sample.h my_msgs/Reading.h my_msgs/Twist.h my_msgs/Nothing.h \
	std_msgs/Header.h builtin_interfaces/Time.h geometry_msgs/Vector3.h geometry_msgs/Twist.h; do
	[ -f "$out_dir/$h" ] || {
		echo "FAIL: $out_dir/$h was not written"
		fails=$((fails + 1))
	}
done
S=$out_dir/my_msgs/Sample.h
file_has "$S" '^#ifndef HAKO_MSGS_MY_MSGS_SAMPLE_H$'
file_has "$S" '^#include "\.\./geometry_msgs/Vector3\.h"$'
file_has "$S" '^#include "\.\./my_msgs/Reading\.h"$'
file_has "$S" '^#include "\.\./std_msgs/Header\.h"$'
file_has "$S" '^typedef struct Hako_my_msgs_Sample \{$'
file_has "$S" '^typedef Hako_my_msgs_Sample Hako_Sample;$'
file_has "$S" 'Hako_std_msgs_Header header;'
file_has "$S" 'int32_t default_;'
file_has "$S" 'int32_t flags\[3\];'
file_has "$S" 'char labels\[2\]\[128\];'
file_has "$S" 'hako_varray_ref_t samples;'
file_has "$S" '^hako_pdu_my_msgs_Sample_samples\(const void \*pdu, size_t len, uint32_t \*count\)$'
file_has "$S" '^static inline const double \*$'
file_has "$S" '^hako_pdu_my_msgs_Sample_readings_alloc\(hako_pdu_writer_t \*w, Hako_my_msgs_Sample \*obj, uint32_t count\)$'
file_has "$S" '^static inline Hako_my_msgs_Reading \*$'
file_has "$S" 'HAKO_PDU_HEAP_BUDGET_MY_MSGS_SAMPLE 1000u'
file_has "$S" 'HAKO_PDU_STATIC_ASSERT\(offsetof\(Hako_my_msgs_Sample, default_\) == '
file_has "$S" 'hako_pdu_my_msgs_Sample_writer_init'
# Reading has a variable array of its own; its helpers work on any Hako_my_msgs_Reading.
file_has "$out_dir/my_msgs/Reading.h" 'hako_pdu_my_msgs_Reading_raw_of\(const void \*pdu'
file_has "$out_dir/my_msgs/Reading.h" 'HAKO_PDU_HEAP_BUDGET_MY_MSGS_READING 4096u'
file_has "$out_dir/my_msgs/Reading.h" 'const hako_pdu_string_t|char unit\[128\];'
# The clash: both Twists keep their long names only.
file_has "$out_dir/my_msgs/Twist.h" '^typedef struct Hako_my_msgs_Twist \{$'
file_lacks "$out_dir/my_msgs/Twist.h" 'Hako_Twist;'
file_lacks "$out_dir/geometry_msgs/Twist.h" 'Hako_Twist;'
file_has "$out_dir/geometry_msgs/Vector3.h" '^typedef Hako_geometry_msgs_Vector3 Hako_Vector3;$'
file_has "$out_dir/geometry_msgs/Twist.h" 'HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST 72u'
# No fields: no struct, only the size and init.
file_lacks "$out_dir/my_msgs/Nothing.h" 'typedef struct'
file_has "$out_dir/my_msgs/Nothing.h" 'HAKO_PDU_SIZE_MY_MSGS_NOTHING 24u'

# Every header compiles alone and together as strict C11 with warnings as errors.
{
	for h in "$out_dir"/*/*.h; do
		echo "#include \"${h#"$out_dir"/}\""
	done
	echo 'int main(void) { Hako_Sample s; s.default_ = 1; return s.default_ - 1; }'
} >"$tmp/all.c"
expect 0 "$CC" -std=c11 -Wall -Wextra -Wpedantic -Werror -I "$out_dir" -I "$INC" -I "$BASE_INC" \
	-fsyntax-only "$tmp/all.c"
for h in "$out_dir"/*/*.h; do
	echo "#include \"$h\"" >"$tmp/one.c"
	expect 0 "$CC" -std=c11 -Wall -Wextra -Wpedantic -Werror -I "$INC" -I "$BASE_INC" -fsyntax-only "$tmp/one.c"
done
if command -v c++ >/dev/null 2>&1; then
	cp "$tmp/all.c" "$tmp/all.cc"
	expect 0 c++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -I "$out_dir" -I "$INC" -I "$BASE_INC" \
		-fsyntax-only "$tmp/all.cc"
fi

# ---- heap budgets from a pdudef ----
cat >"$tmp/pdudef.json" <<'EOF'
{"robots": [{"name": "R", "shm_pdu_readers": [], "shm_pdu_writers": [
  {"type": "my_msgs/Reading", "org_name": "a", "channel_id": 0, "pdu_size": 200},
  {"type": "my_msgs/Reading", "org_name": "b", "channel_id": 1, "pdu_size": 300},
  {"type": "geometry_msgs/Twist", "org_name": "c", "channel_id": 2, "pdu_size": 72}]}]}
EOF
expect 0 "$GEN" -I "$m" --out "$tmp/gen2" --pdudef "$tmp/pdudef.json"
file_has "$tmp/gen2/my_msgs/Reading.h" 'HAKO_PDU_SIZE_MY_MSGS_READING 300u'
file_has "$tmp/gen2/geometry_msgs/Twist.h" 'HAKO_PDU_SIZE_GEOMETRY_MSGS_TWIST 72u'
# my_msgs/Twist is on the search path (-I): the shorthand goes.
file_lacks "$tmp/gen2/geometry_msgs/Twist.h" "Hako_Twist;"
# --heap-budget wins over the pdudef.
expect 0 "$GEN" -I "$m" --out "$tmp/gen3" --pdudef "$tmp/pdudef.json" \
	--heap-budget my_msgs/Reading=8 my_msgs/Reading
file_has "$tmp/gen3/my_msgs/Reading.h" 'HAKO_PDU_HEAP_BUDGET_MY_MSGS_READING 8u'
[ ! -e "$tmp/gen3/geometry_msgs/Twist.h" ] || {
	echo "FAIL: a type only in the pdudef was generated although types were named"
	fails=$((fails + 1))
}
sed -i 's/"pdu_size": 72/"pdu_size": 64/' "$tmp/pdudef.json"
expect 1 "$GEN" -I "$m" --out "$tmp/gen4" --pdudef "$tmp/pdudef.json"
has 'pdu_size 64 of geometry_msgs/Twist is smaller than its fixed part \(72 bytes'

# ---- HAKO_MSG_PATH is a search path too ----
expect 0 env HAKO_MSG_PATH="$m" "$GEN" --out "$tmp/gen5" my_msgs/Twist
file_has "$tmp/gen5/my_msgs/Twist.h" 'float speed;'

# ---- the layout table ----
expect 0 "$GEN" -I "$m" --out "$tmp/gen6" --layout-check "$tmp/table.c" my_msgs/Sample
file_has "$tmp/table.c" '"my_msgs/Sample", "default", offsetof\(Hako_my_msgs_Sample, default_\)'
expect 0 "$CC" -std=c11 -Wall -Wextra -Wpedantic -Werror -I "$tmp/gen6" -I "$INC" -I "$BASE_INC" -c \
	-o "$tmp/table.o" "$tmp/table.c"

if [ "$fails" -ne 0 ]; then
	echo "registry.msggen: $fails check(s) failed"
	exit 1
fi
echo "registry.msggen: all checks passed"
