#!/bin/sh
# An agent that prints something that is not a result.
cat >/dev/null
echo "Traceback (most recent call last): something broke" >&2
echo 'this is not JSON {'
