"""extremes: the smallest, largest and median number in the query."""
import math
import re
import statistics

from agent import serve


def number(text):
    """The number text writes; one beyond the float range is an error naming it, not inf."""
    value = float(text.replace(",", ""))
    if math.isinf(value):
        shown = text if len(text) <= 24 else f"{text[:12]}... ({sum(c.isdigit() for c in text)} digits)"
        raise ValueError(f"number out of range: {shown}")
    return value


def extremes(dispatch):
    # U+2212 MINUS SIGN, as typeset text writes one, is a minus: "−5" is -5.
    query = dispatch["query"].replace("\u2212", "-")
    # A number may group its thousands with commas (1,000 is one number); 4,8 is two. One may
    # start at its point (.5 is a half).
    numbers = [number(n) for n in
               re.findall(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?(?:\d+(?:\.\d+)?|\.\d+)", query, re.ASCII)]
    if not numbers:
        raise ValueError("no numbers in the query")
    low, high, median = min(numbers), max(numbers), statistics.median(numbers)
    if math.isinf(median):
        # The two middle numbers overflowed as they were added; halved first, they do not.
        middle = sorted(numbers)[len(numbers) // 2 - 1:][:2]
        median = middle[0] / 2 + middle[1] / 2
    return ({"min": low, "max": high, "median": median},
            f"from {low:g} to {high:g}, median {median:g}", 1.0)


serve(extremes)
