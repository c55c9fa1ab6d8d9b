#!/bin/sh
# Reports the mean word length from the upstream results of words and letters.
set -eu
. "$(dirname "$0")/lib.sh"
words=$(number words)
letters=$(number letters)
if [ -z "$words" ] || [ -z "$letters" ] || [ "$words" = 0 ]; then
	echo "report needs the results of words and letters" >&2
	exit 1
fi
mean=$(awk -v l="$letters" -v w="$words" 'BEGIN { printf "%.2f", l / w }')
echo "mean word length $mean" >&2
respond "{\"mean_word_length\":$mean,\"words\":$words,\"letters\":$letters}" "The query has $words words of $mean letters on average" 0.9
