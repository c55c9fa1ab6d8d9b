"""The exec protocol in Python, shared by extremes.py and report.py.

serve(compute) reads the dispatch from stdin, calls compute(dispatch), which returns
(agent_result, analysis_summary, confidence), and writes the response troupe expects on stdout.
An exception becomes exit status 1 with its message on stderr: troupe records the dispatch
as failed (AGENT_ERROR) with that message. So does a result holding an infinity or a NaN,
which JSON cannot carry: nothing is written then.
"""
import json
import sys


def serve(compute):
    dispatch = json.load(sys.stdin)
    try:
        result, summary, confidence = compute(dispatch)
        # Only what the agent knows: troupe fills in the dispatch's ids, the status and the
        # timing. The whole response is encoded before any of it is written.
        response = json.dumps({
            "agent_result": result,
            "analysis_summary": summary,
            "confidence": confidence,
        }, allow_nan=False)
    except Exception as err:
        print(err, file=sys.stderr)
        sys.exit(1)
    sys.stdout.write(response)
