#!/bin/bash
# Fails if a function in the given C files is longer than MAX lines (default 80).
#   check_funclen.sh [-m MAX] [-l] FILE.c...
# -l lists every function, longest first, and never fails.
#
# How it works: the sources are clang-formatted in kernel style
# (tests/tools/check_format.sh), so a function body, and nothing else, opens
# with a "{" alone in column 0 and closes with a "}" alone in column 0
# (structs and initialisers open on their declaration's line and close with
# "};").  A function's length runs from the first line of its signature
# (the first line after the previous blank, comment or preprocessor line) to
# its closing brace.
max=80
list=0
while getopts m:l o; do
	case $o in
	m) max=$OPTARG ;;
	l) list=1 ;;
	*) echo "usage: $0 [-m MAX] [-l] FILE.c..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-m MAX] [-l] FILE.c..." >&2; exit 2; }
for f in "$@"; do
	[ -r "$f" ] || { echo "$0: cannot read $f" >&2; exit 2; }
done
out=$(awk '
	FNR == 1 { sig = 0; inbody = 0 }
	!inbody && /^[A-Za-z_]/ && !sig { sig = FNR; name = $0 }
	!inbody && (/^$/ || /^[ \t]*(\/\*|\*|#)/ || /;[ \t]*$/) && !/^\{$/ { sig = 0 }
	/^\{$/ { inbody = 1; if (!sig) sig = FNR; next }
	inbody && /^\}$/ {
		inbody = 0
		n = FNR - sig + 1
		sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
		printf "%d %s:%d %s\n", n, FILENAME, sig, name
		sig = 0
	}
' "$@" | sort -rn)
if [ "$list" = 1 ]; then
	printf '%s\n' "$out"
	exit 0
fi
long=$(printf '%s\n' "$out" | awk -v m="$max" '$1 > m')
if [ -n "$long" ]; then
	echo "functions over $max lines (lines, file:line, name):"
	printf '%s\n' "$long"
	exit 1
fi
exit 0
