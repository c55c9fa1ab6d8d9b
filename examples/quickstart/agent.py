"""The exec protocol in Python, shared by extremes.py and report.py.

serve(compute) reads the dispatch from stdin, calls compute(dispatch), which returns
(agent_result, analysis_summary, confidence), and writes the response troupe expects on stdout.
An exception becomes exit status 1 with its message on stderr: troupe records the dispatch
as failed (AGENT_ERROR) with that message.
"""
import datetime
import json
import sys


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def serve(compute):
    started = now()
    dispatch = json.load(sys.stdin)
    try:
        result, summary, confidence = compute(dispatch)
    except Exception as err:
        print(err, file=sys.stderr)
        sys.exit(1)
    json.dump({
        "dispatch_id": dispatch["dispatch_id"],
        "session_id": dispatch["session_id"],
        "query_id": dispatch["query_id"],
        "agent_name": dispatch["target_agent"],
        "status": "completed",
        "agent_result": result,
        "analysis_summary": summary,
        "confidence": confidence,
        "execution_time_ms": 0,
        "started_at": started,
        "completed_at": now(),
    }, sys.stdout)
