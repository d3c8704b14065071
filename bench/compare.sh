#!/bin/sh
# Compare two runs of bench/run.sh, variant by variant.
#   bench/compare.sh BEFORE_DIR AFTER_DIR
# Each DIR is a bench-results folder (its latest <bench>.csv files are read) or a folder of
# such CSVs. Prints a Markdown table: bench, variant, payload, p50 (us) and ops/s before and
# after, and after/before of ops/s (or before/after of p50 when a row has no rate), so that
# > 1 is always "faster". Rows found in one run only are listed with "-" on the other side.
# Comment lines (#) of the CSVs, with their ratios against baselines, are not compared here.
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 BEFORE_DIR AFTER_DIR" >&2
	exit 2
fi
for d in "$1" "$2"; do
	if [ ! -d "$d" ]; then
		echo "$0: $d: not a folder" >&2
		exit 2
	fi
done

# rows DIR: "bench,variant,payload<TAB>p50<TAB>ops" for every data row of DIR's <bench>.csv.
rows() {
	for f in "$1"/*.csv; do
		case $f in
		*-[0-9]*-[0-9]*.csv) continue ;; # the timestamped copies: the latest is <bench>.csv
		esac
		[ -e "$f" ] || continue
		awk -F, 'NR > 1 && $0 !~ /^#/ && NF >= 11 && $1 != "bench" {
			printf "%s,%s,%s\t%s\t%s\n", $1, $2, $3, $7, $11 }' "$f"
	done
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows "$1" | sort -t "$(printf '\t')" -k1,1 >"$tmp/a"
rows "$2" | sort -t "$(printf '\t')" -k1,1 >"$tmp/b"
echo "| bench | variant | payload | p50 us before | p50 us after | ops/s before | ops/s after | speed after/before |"
echo "|---|---|---|---|---|---|---|---|"
join -t "$(printf '\t')" -a 1 -a 2 -e - -o 0,1.2,2.2,1.3,2.3 "$tmp/a" "$tmp/b" |
	awk -F'\t' '{
		split($1, k, ",")
		r = "-"
		if ($4 != "-" && $5 != "-" && $4 + 0 > 0) {
			r = sprintf("%.2f", $5 / $4)
		} else if ($2 != "-" && $3 != "-" && $3 + 0 > 0) {
			r = sprintf("%.2f", $2 / $3)
		}
		printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", k[1], k[2], k[3], $2, $3, $4, $5, r
	}'
