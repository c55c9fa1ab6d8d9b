"""extremes: the smallest, largest and median number in the query."""
import re
import statistics

from agent import serve


def extremes(dispatch):
    # A number may group its thousands with commas (1,000 is one number); 4,8 is two.
    numbers = [float(n.replace(",", "")) for n in
               re.findall(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?", dispatch["query"], re.ASCII)]
    if not numbers:
        raise ValueError("no numbers in the query")
    low, high, median = min(numbers), max(numbers), statistics.median(numbers)
    return ({"min": low, "max": high, "median": median},
            f"from {low:g} to {high:g}, median {median:g}", 1.0)


serve(extremes)
