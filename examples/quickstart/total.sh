#!/bin/sh
# total: counts and adds the numbers in the query. Reads the dispatch (JSON) on stdin, writes
# its result (JSON) on stdout, progress on stderr. POSIX sh and awk; jq would do it shorter.
set -eu
dispatch=$(cat)
# get NAME: the dispatch's first string field NAME (its own fields come first), each escape
# in it (\", \u003c for <, …) read as a space: enough to find the numbers in it.
get() {
	printf '%s' "$dispatch" | grep -Eo "\"$1\":\"([^\"\\\\]|\\\\.)*\"" | head -n 1 |
		sed -E -e "s/^\"$1\":\"//" -e 's/"$//' -e 's/\\(u[0-9a-fA-F]{4}|.)/ /g'
}
# A number may group its thousands with commas (1,000 is one number); 4,8 is two.
numbers=$(get query | grep -Eo -- '-?[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+)?|-?[0-9]+(\.[0-9]+)?' | tr -d , || true)
if [ -z "$numbers" ]; then
	echo "no numbers in the query" >&2
	exit 1
fi
set -- $(printf '%s\n' "$numbers" | awk '{ n++; s += $1 } END { printf "%d %.15g\n", n, s }')
echo "$1 numbers, sum $2" >&2
# Only what the agent knows: troupe fills in the dispatch's ids, the status and the timing.
cat <<JSON
{"agent_result":{"count":$1,"sum":$2},"analysis_summary":"$1 numbers adding up to $2","confidence":1}
JSON
