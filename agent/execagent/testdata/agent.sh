#!/bin/sh
# A troupe exec agent in POSIX sh (sed, wc, date; no jq): dispatch JSON on stdin, result JSON on
# stdout, progress on stderr. It counts the words of the query. It assumes troupe's compact
# encoding of the dispatch and a query without escaped quotes, which is enough to show the
# protocol; a real shell agent would use jq.
set -eu
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
in=$(cat)
field() { printf '%s' "$in" | sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
id=$(field dispatch_id)
echo "shell agent got $id" >&2
query=$(field query)
words=$(printf '%s\n' "$query" | wc -w | tr -d ' ')
echo "counted $words words" >&2
printf '{"dispatch_id":"%s","session_id":"%s","query_id":"%s","agent_name":"%s","status":"completed",' \
	"$id" "$(field session_id)" "$(field query_id)" "$(field target_agent)"
printf '"agent_result":{"words":%s,"language":"sh"},"errors":[],"warnings":[],"training_signals":[],' "$words"
printf '"execution_time_ms":0,"started_at":"%s","completed_at":"%s"}\n' "$started" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
