#!/bin/sh
# total: counts and adds the numbers in the query. Reads the dispatch (JSON) on stdin, writes
# its result (JSON) on stdout, progress on stderr. POSIX sh and awk; jq would do it shorter.
set -eu
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
dispatch=$(cat)
# get NAME: the dispatch's first string field NAME (its own fields come first), up to any
# escaped quote in it.
get() {
	printf '%s' "$dispatch" | grep -o "\"$1\":\"[^\"]*\"" | head -n 1 | cut -d '"' -f 4
}
numbers=$(get query | grep -Eo -- '-?[0-9]+(\.[0-9]+)?' || true)
if [ -z "$numbers" ]; then
	echo "no numbers in the query" >&2
	exit 1
fi
set -- $(printf '%s\n' "$numbers" | awk '{ n++; s += $1 } END { print n, s }')
echo "$1 numbers, sum $2" >&2
cat <<JSON
{"dispatch_id":"$(get dispatch_id)","session_id":"$(get session_id)","query_id":"$(get query_id)",
 "agent_name":"$(get target_agent)","status":"completed",
 "agent_result":{"count":$1,"sum":$2},"analysis_summary":"$1 numbers adding up to $2",
 "confidence":1,"execution_time_ms":0,
 "started_at":"$started","completed_at":"$(date -u +%Y-%m-%dT%H:%M:%SZ)"}
JSON
