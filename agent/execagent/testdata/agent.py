#!/usr/bin/env python3
"""A troupe exec agent in Python: dispatch JSON on stdin, result JSON on stdout, progress on
stderr. parsed_query.mode picks a behaviour for tests: "ok" (count words), "fail" (exit 3),
"tempfail" (exit 75), "invalid" (a result missing required fields), "huge" (too much stdout),
"chatty" (many stderr lines), "hang" (never answers)."""
import json
import sys
import time
from datetime import datetime, timezone


def now():
    return datetime.now(timezone.utc).isoformat()


def main():
    started = now()
    d = json.load(sys.stdin)
    mode = (d.get("parsed_query") or {}).get("mode", "ok")
    print("python agent got " + d["dispatch_id"], file=sys.stderr, flush=True)
    if mode == "fail":
        print("cannot do this: the corpus is missing", file=sys.stderr)
        sys.exit(3)
    if mode == "tempfail":
        print("upstream busy, try again", file=sys.stderr)
        sys.exit(75)
    if mode == "hang":
        print("ready", file=sys.stderr, flush=True)
        while True:
            time.sleep(3600)
    if mode == "chatty":
        for i in range(50):
            print("line %d" % i, file=sys.stderr)
    if mode == "huge":
        sys.stdout.write("x" * (1 << 20))
        return
    res = {
        "dispatch_id": d["dispatch_id"], "session_id": d["session_id"], "query_id": d["query_id"],
        "agent_name": d["target_agent"], "status": "completed",
        "agent_result": {"words": len(d["query"].split()), "language": "python"},
        "errors": [], "warnings": [], "training_signals": [], "requires_human": False,
        "execution_time_ms": 0, "started_at": started, "completed_at": now(),
    }
    if mode == "invalid":
        del res["session_id"]
        res["confidence"] = 7
    json.dump(res, sys.stdout)


main()
