# Shared by the workflow's agents: reads the dispatch (troupe's compact JSON) from stdin and
# answers with a result. POSIX sh, sed and awk; a real shell agent would use jq.
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
in=$(cat)
# field NAME: the first string field NAME of the dispatch (no escaped quotes in it); the
# dispatch's own fields come before its upstream results'.
field() { printf '%s' "$in" | grep -o "\"$1\":\"[^\"]*\"" | head -n 1 | sed 's/^[^:]*:"//; s/"$//'; }
# number NAME: the first numeric field NAME in the dispatch (an upstream result's).
number() { printf '%s' "$in" | grep -o "\"$1\":[0-9.]*" | head -n 1 | sed 's/^[^:]*://'; }
# respond RESULT SUMMARY CONFIDENCE: a completed result with agent_result RESULT (a JSON object).
respond() {
	printf '{"dispatch_id":"%s","session_id":"%s","query_id":"%s","agent_name":"%s","status":"completed",' \
		"$(field dispatch_id)" "$(field session_id)" "$(field query_id)" "$(field target_agent)"
	printf '"agent_result":%s,"analysis_summary":"%s","confidence":%s,"errors":[],"warnings":[],' "$1" "$2" "$3"
	printf '"execution_time_ms":0,"started_at":"%s","completed_at":"%s"}\n' "$started" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}
