#!/bin/bash
# arch.floors: the dependencies between folders point down only (ARCHITECTURE section 1). The
# library folders sit on floors, lowest first:
#
#   base, registry, core, pdu-endpoint, pdu-bridge, conductor, rd, viewer
#
# and the programs (tools/), samples, bench and test sit above them all. This reads, in each
# library folder, every `#include "hako/..."` (or <hako/...>, "hakoi/...") of its C files and
# every target its CMake files link, and fails, naming the file and line, when
#  - a library includes a header of, or links, a library on its own floor or above (the
#    library's own headers and targets excepted);
#  - a library links a target that is no library at all (hako_cli, hako_conductor_gen, a test
#    kit, a program: all above every library);
#  - a program sits inside a library folder (add_executable in its CMake files, a main() in its
#    C files).
# A header is a library's when it is in <folder>/include/hako/ (the generated hako/msgs/ are the
# registry's, base/internal/hakoi/ base's); a target is a library's when the folder's CMake
# files define it (hako_add_library(x) defines hako_x and hako_x_objs, add_library(t) t).
#
# usage: check_floors.sh SOURCE_DIR    exit 0 (no violation), 1 (violations, one line each), 2
set -u
export LC_ALL=C

FLOORS=(base registry core pdu-endpoint pdu-bridge conductor rd viewer)

# ---- Known exceptions: "<file pattern> <header or target pattern>" (bash patterns) ----
# None: the last ones (the conductor linking and including rd) went with the RD-Full move.
KNOWN=()
# ---- end of the known exceptions ----

src=${1:-}
if [ -z "$src" ] || [ ! -d "$src" ]; then
	echo "usage: check_floors.sh SOURCE_DIR" >&2
	exit 2
fi
cd "$src" || exit 2

declare -A floor_of      # library folder -> floor
declare -A header_folder # "hako/x.h" -> library folder
declare -A target_folder # CMake target -> library folder
violations=0
known_used=()

violation() {
	echo "$1"
	violations=$((violations + 1))
}

# 0 (and remembered) if "file what" is a known exception.
is_known() {
	local file=$1 what=$2 i pat_file pat_what
	for i in "${!KNOWN[@]}"; do
		pat_file=${KNOWN[$i]%% *}
		pat_what=${KNOWN[$i]#* }
		# shellcheck disable=SC2053 # the patterns are meant to match
		if [[ $file == $pat_file && $what == $pat_what ]]; then
			known_used[i]=1
			return 0
		fi
	done
	return 1
}

# The CMake files of a folder, and its C files.
cmake_files() { find "$1" \( -name CMakeLists.txt -o -name '*.cmake' \) -type f | sort; }
c_files() { find "$1" \( -name '*.c' -o -name '*.h' \) -type f | sort; }

# "line<TAB>first<TAB>word" for every word of every call to one of the CMake commands $2 (a
# regex of names) in file $1; first is 1 for the call's first argument (the target it is about),
# else 0. Comments are dropped; a call may span lines.
cmake_call_words() {
	awk -v cmds="$2" '
	{
		sub(/#.*/, "")
		line = $0
		while (line != "") {
			if (!inside) {
				if (match(line, "(^|[^A-Za-z0-9_])(" cmds ")[ \t]*\\(") == 0) {
					break
				}
				line = substr(line, RSTART + RLENGTH)
				inside = 1
				depth = 1
				first = 1
			}
			# the words up to the closing parenthesis of the call
			out = ""
			for (i = 1; i <= length(line); i++) {
				c = substr(line, i, 1)
				if (c == "(") {
					depth++
				} else if (c == ")") {
					if (--depth == 0) {
						break
					}
				}
				out = out c
			}
			n = split(out, w, /[ \t]+/)
			for (k = 1; k <= n; k++) {
				if (w[k] == "") {
					continue
				}
				print NR "\t" first "\t" w[k]
				first = 0
			}
			if (depth == 0) {
				inside = 0
				line = substr(line, i + 1)
			} else {
				line = ""
			}
		}
	}' "$1"
}

for i in "${!FLOORS[@]}"; do
	lib=${FLOORS[$i]}
	if [ ! -d "$lib" ]; then
		echo "check_floors: no library folder $lib in $src" >&2
		exit 2
	fi
	floor_of[$lib]=$i
	for h in "$lib"/include/hako/*.h; do
		[ -e "$h" ] && header_folder["hako/${h#"$lib"/include/hako/}"]=$lib
	done
	for f in $(cmake_files "$lib"); do
		while IFS=$'\t' read -r _ first word; do
			[ "$first" = 1 ] || continue
			target_folder[hako_$word]=$lib
			target_folder[hako_${word}_objs]=$lib
		done < <(cmake_call_words "$f" hako_add_library)
		while IFS=$'\t' read -r _ first word; do
			[ "$first" = 1 ] && target_folder[$word]=$lib
		done < <(cmake_call_words "$f" add_library)
	done
done

# What folder a "hako/..." or "hakoi/..." header belongs to ("" if none).
folder_of_header() {
	case $1 in
	hako/msgs/*) echo registry ;;
	hakoi/*) echo base ;;
	*) echo "${header_folder[$1]:-}" ;;
	esac
}

for lib in "${FLOORS[@]}"; do
	mine=${floor_of[$lib]}

	# Includes of other libraries' headers.
	while IFS=: read -r file line text; do
		header=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]\([^>"]*\)[>"].*/\1/p' \
			<<<"$text")
		other=$(folder_of_header "$header")
		if [ -z "$other" ]; then
			is_known "$file" "$header" ||
				violation "$file:$line: $lib includes $header, which is no library's public header"
		elif [ "$other" != "$lib" ] && [ "${floor_of[$other]}" -ge "$mine" ]; then
			is_known "$file" "$header" ||
				violation "$file:$line: $lib includes $header of $other, which is not below it (floors: ${FLOORS[*]})"
		fi
	done < <(for f in $(c_files "$lib"); do
		grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]hakoi?/' "$f" | sed "s|^|$f:|"
	done)

	for f in $(cmake_files "$lib"); do
		# Links of other libraries, or of what is no library.
		while IFS=$'\t' read -r line first word; do
			[ "$first" = 0 ] || continue # the target linking
			case $word in
			PUBLIC | PRIVATE | INTERFACE | *'$'* | *::* | -*) continue ;;
			hako_* | hako-*) ;;
			*) continue ;; # a system library (m, rt, ...)
			esac
			other=${target_folder[$word]:-}
			if [ -z "$other" ]; then
				is_known "$f" "$word" ||
					violation "$f:$line: $lib links $word, which is no library (floors: ${FLOORS[*]})"
			elif [ "$other" != "$lib" ] && [ "${floor_of[$other]}" -ge "$mine" ]; then
				is_known "$f" "$word" ||
					violation "$f:$line: $lib links $word of $other, which is not below it (floors: ${FLOORS[*]})"
			fi
		done < <(cmake_call_words "$f" 'target_link_libraries|hako_link_library')

		# A program in a library folder.
		while IFS=: read -r line _; do
			violation "$f:$line: a program inside the library folder $lib/ (programs go to tools/<name>/)"
		done < <(grep -nE '(^|[^A-Za-z0-9_])add_executable[[:space:]]*\(' "$f")
	done
	while IFS=: read -r file line _; do
		violation "$file:$line: a main() inside the library folder $lib/ (programs go to tools/<name>/)"
	done < <(for f in $(c_files "$lib"); do
		grep -nE '^(int|void)[[:space:]]+main[[:space:]]*\(' "$f" | sed "s|^|$f:|"
	done)
done

for i in "${!KNOWN[@]}"; do
	[ -n "${known_used[i]:-}" ] ||
		echo "note: the known exception \"${KNOWN[$i]}\" no longer occurs: delete it from $0"
done
if [ "$violations" -gt 0 ]; then
	echo "arch.floors: $violations violation(s)"
	exit 1
fi
echo "arch.floors: ok (${FLOORS[*]}, then the programs)"
