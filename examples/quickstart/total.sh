#!/bin/sh
# total: counts and adds the numbers in the query. Reads the dispatch (JSON) on stdin, writes
# its result (JSON) on stdout, progress on stderr. POSIX sh and awk; jq would do it shorter.
set -eu
dispatch=$(cat)
minus=$(printf '\342\210\222') # U+2212 MINUS SIGN in UTF-8; the script itself stays ASCII
# get NAME: the dispatch's first string field NAME (its own fields come first), a minus sign
# in it (raw or as \u2212) read as "-" and every other escape (\", \u003c for <, …) as a
# space: enough to find the numbers in it. Escaped backslashes go first, so that "\\u2212"
# stays a backslash and text.
get() {
	printf '%s' "$dispatch" | grep -Eo "\"$1\":\"([^\"\\\\]|\\\\.)*\"" | head -n 1 |
		sed -E -e "s/^\"$1\":\"//" -e 's/"$//' -e 's/\\\\/ /g' -e 's/\\u2212/-/g' \
			-e 's/\\(u[0-9a-fA-F]{4}|.)/ /g' -e "s/$minus/-/g"
}
# A number may group its thousands with commas (1,000 is one number); 4,8 is two. One may
# start at its point (.5 is a half).
numbers=$(get query | grep -Eo -- '-?[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+)?|-?([0-9]+(\.[0-9]+)?|\.[0-9]+)' | tr -d , || true)
if [ -z "$numbers" ]; then
	echo "no numbers in the query" >&2
	exit 1
fi
# A number beyond the float range (400 digits) is an error naming it, and so is a sum that
# overflows: never an inf in the JSON. The number is judged by its digits, as awks read it
# differently (mawk and gawk as inf, BWK awk, macOS's, as 0): its whole part from
# 2^1024 - 2^970 on rounds to no float. The sum is judged as printed: from
# 1.7976931348623151e308 on, rounding to 15 digits carries it past the largest float.
summary=$(printf '%s\n' "$numbers" | awk '
	function huge(t, i) {
		i = t ""
		sub(/^-/, "", i)
		sub(/[.].*/, "", i)
		sub(/^0+/, "", i)
		return length(i) > 309 || length(i) == 309 && i >= "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792"
	}
	function shown(t, d) {
		if (length(t) <= 24) return t
		d = t
		return substr(t, 1, 12) "... (" gsub(/[0-9]/, "", d) " digits)"
	}
	bad == "" && huge($1) { bad = "number out of range: " shown($1) }
	{ n++; s += $1 }
	END {
		if (bad == "" && (s >= 1.7976931348623151e308 || s <= -1.7976931348623151e308))
			bad = "the sum of the " n " numbers is out of range (beyond 1.8e308)"
		if (bad != "") print bad; else printf "ok %d %.15g\n", n, s
	}')
case $summary in
ok\ *) set -- $summary && shift ;;
*)
	echo "$summary" >&2
	exit 1
	;;
esac
echo "$1 numbers, sum $2" >&2
# Only what the agent knows: troupe fills in the dispatch's ids, the status and the timing.
cat <<JSON
{"agent_result":{"count":$1,"sum":$2},"analysis_summary":"$1 numbers adding up to $2","confidence":1}
JSON
