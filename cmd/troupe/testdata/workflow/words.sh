#!/bin/sh
# Counts the words of the query.
set -eu
. "$(dirname "$0")/lib.sh"
query=$(field query)
n=$(printf '%s\n' "$query" | wc -w | tr -d ' ')
echo "counted $n words" >&2
respond "{\"words\":$n}" "$n words" 1
