#!/bin/sh
# An agent that ignores SIGTERM, and so does the child it starts (ignored signals are
# inherited): only SIGKILL ends them. Both hold fd 3 open on $HOLD, so a test can see when the
# last of them is gone.
trap '' TERM
exec 3>"$HOLD"
sleep 1000 &
echo "ready" >&2
while :; do wait; done
