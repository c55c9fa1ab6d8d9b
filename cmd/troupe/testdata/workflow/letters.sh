#!/bin/sh
# Counts the letters of the query.
set -eu
. "$(dirname "$0")/lib.sh"
query=$(field query)
n=$(printf '%s' "$query" | tr -cd 'A-Za-z' | wc -c | tr -d ' ')
echo "counted $n letters" >&2
respond "{\"letters\":$n}" "$n letters" 1
