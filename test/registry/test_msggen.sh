#!/bin/bash
# registry.msggen: hako-msggen on user types: errors, naming, heap budgets, headers that
# compile as strict C11 (and C++ when a C++ compiler is at hand), and the offset files of
# --offsets, checked against Hakoniwa's.
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

# ---- offset files (hakoniwa-pdu-python's HAKO_BINARY_PATH) ----
# offset_is FILE: FILE holds exactly the lines on stdin (newline-terminated); else show both.
offset_is() {
	if ! diff -u - "$1" >"$tmp/offset.diff" 2>&1; then
		fail "$1 differs from the expected lines (- expected, + written):"
		sed 's/^/    /' "$tmp/offset.diff"
	fi
}

# The built-in types, every one of them (each .msg of registry/msg), and nothing else. Without
# --out no headers are written, not even to the current folder.
off=$tmp/offsets
in_dir() (
	cd "$1" && shift && "$@"
)
mkdir "$tmp/cwd"
expect 0 in_dir "$tmp/cwd" "$GEN" --all-builtin --offsets "$off"
[ -z "$(ls -A "$tmp/cwd")" ] || fail "--offsets without --out wrote to the current folder: $(ls "$tmp/cwd")"
builtin_msgs=$(dirname "${BASH_SOURCE[0]}")/../../registry/msg
if ! diff -u <(cd "$builtin_msgs" && find . -name '*.msg' | sed 's/\.msg$/.offset/' | sort) \
	<(cd "$off" && find . -type f | sort) >"$tmp/offset.diff"; then
	fail "the offset files are not one per built-in type (- missing, + extra):"
	sed 's/^/    /' "$tmp/offset.diff"
fi
# Every line has the shape PduManager splits on ':'.
bad=$(cat "$off"/*/*.offset | grep -cvE '^(single:(primitive|struct):[A-Za-z0-9_]+:[A-Za-z0-9_/]+:[0-9]+:[0-9]+|array:(primitive|struct):[A-Za-z0-9_]+:[A-Za-z0-9_/]+:[0-9]+:[0-9]+:[0-9]+|varray:(primitive|struct):[A-Za-z0-9_]+:[A-Za-z0-9_/]+:[0-9]+:[0-9]+:8)$')
same "malformed lines in the offset files" "$bad" 0

# Hakoniwa's own files for these types, line for line.
offset_is "$off/geometry_msgs/Twist.offset" <<'EOF'
single:struct:linear:Vector3:0:24
single:struct:angular:Vector3:24:24
EOF
offset_is "$off/sensor_msgs/PointCloud2.offset" <<'EOF'
single:struct:header:std_msgs/Header:0:136
single:primitive:height:uint32:136:4
single:primitive:width:uint32:140:4
varray:struct:fields:PointField:144:140:8
single:primitive:is_bigendian:bool:152:4
single:primitive:point_step:uint32:156:4
single:primitive:row_step:uint32:160:4
varray:primitive:data:uint8:164:1:8
single:primitive:is_dense:bool:172:4
EOF
offset_is "$off/std_msgs/Header.offset" <<'EOF'
single:struct:stamp:builtin_interfaces/Time:0:8
single:primitive:frame_id:string:8:128
EOF
offset_is "$off/geometry_msgs/PoseWithCovariance.offset" <<'EOF'
single:struct:pose:Pose:0:56
array:primitive:covariance:float64:56:288:36
EOF
offset_is "$off/hako_srv_msgs/ServiceRequestHeader.offset" <<'EOF'
single:primitive:request_id:uint32:0:4
single:primitive:service_name:string:4:128
single:primitive:client_name:string:132:128
single:primitive:opcode:uint8:260:1
single:primitive:status_poll_interval_msec:int32:264:4
EOF
# byte and char keep their names (their layout is uint8's).
offset_is "$off/std_msgs/ByteMultiArray.offset" <<'EOF'
single:struct:layout:MultiArrayLayout:0:12
varray:primitive:data:byte:12:1:8
EOF
offset_is "$off/std_msgs/Char.offset" <<'EOF'
single:primitive:data:char:0:1
EOF

# A user type: its file, those of the types it nests, an empty file for a type without fields;
# with --out, the headers too.
expect 0 "$GEN" -I "$m" --out "$tmp/gen7" --offsets "$tmp/offsets2" my_msgs/Sample my_msgs/Nothing
offset_is "$tmp/offsets2/my_msgs/Sample.offset" <<'EOF'
single:struct:header:std_msgs/Header:0:136
single:struct:velocity:geometry_msgs/Vector3:136:24
single:primitive:default:int32:160:4
array:primitive:flags:bool:164:12:3
array:primitive:labels:string:176:256:2
varray:primitive:samples:float64:432:8:8
varray:struct:readings:Reading:440:140:8
EOF
offset_is "$tmp/offsets2/my_msgs/Reading.offset" <<'EOF'
single:primitive:channel:uint8:0:1
single:primitive:unit:string:1:128
varray:primitive:raw:int16:132:2:8
EOF
offset_is "$tmp/offsets2/my_msgs/Nothing.offset" </dev/null
got=$(cd "$tmp/offsets2" && find . -type f | sort | tr '\n' ' ')
same "offset files of my_msgs/Sample and my_msgs/Nothing" "$got" \
	"./builtin_interfaces/Time.offset ./geometry_msgs/Vector3.offset ./my_msgs/Nothing.offset ./my_msgs/Reading.offset ./my_msgs/Sample.offset ./std_msgs/Header.offset "
[ -f "$tmp/gen7/my_msgs/Sample.h" ] || fail "--offsets with --out wrote no header"

# A folder that cannot be made or written: the path and the reason, status 1.
expect 2 "$GEN" --offsets
has "option '--offsets' needs a value"
touch "$tmp/plain"
expect 1 "$GEN" --offsets "$tmp/plain" geometry_msgs/Twist
has "cannot create $tmp/plain/geometry_msgs: Not a directory"
mkdir -p "$tmp/offsets3/geometry_msgs/Twist.offset"
expect 1 "$GEN" --offsets "$tmp/offsets3" geometry_msgs/Twist
has "cannot write $tmp/offsets3/geometry_msgs/Twist.offset: Is a directory"
if [ "$(id -u)" != 0 ]; then # root writes into a read-only folder
	mkdir "$tmp/readonly"
	chmod 555 "$tmp/readonly"
	expect 1 "$GEN" --offsets "$tmp/readonly" geometry_msgs/Twist
	has "cannot create $tmp/readonly/geometry_msgs: Permission denied"
fi

if [ "$fails" -ne 0 ]; then
	echo "registry.msggen: $fails check(s) failed"
	exit 1
fi
echo "registry.msggen: all checks passed"
