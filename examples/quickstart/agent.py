"""The exec protocol in Python, shared by extremes.py and report.py.

serve(compute) reads the dispatch from stdin, calls compute(dispatch), which returns
(agent_result, analysis_summary, confidence), and writes the response troupe expects on stdout.
An exception becomes exit status 1 with its message on stderr: troupe records the dispatch
as failed (AGENT_ERROR) with that message.
"""
import json
import sys


def serve(compute):
    dispatch = json.load(sys.stdin)
    try:
        result, summary, confidence = compute(dispatch)
    except Exception as err:
        print(err, file=sys.stderr)
        sys.exit(1)
    # Only what the agent knows: troupe fills in the dispatch's ids, the status and the timing.
    json.dump({
        "agent_result": result,
        "analysis_summary": summary,
        "confidence": confidence,
    }, sys.stdout)
