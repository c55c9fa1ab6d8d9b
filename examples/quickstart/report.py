"""report: combines the results of total and extremes into a mean and a range."""
import math

from agent import serve


def report(dispatch):
    upstream = {u["agent"]: u["result"] for u in dispatch["upstream_results"]}
    total, extremes = upstream["total"], upstream["extremes"]
    mean = total["sum"] / total["count"]
    low, high = extremes["min"], extremes["max"]
    if math.isinf(high - low):
        raise ValueError(f"the range from {low:g} to {high:g} is out of range (beyond 1.8e308)")
    return ({"count": total["count"], "mean": mean, "min": low, "max": high,
             "range": high - low, "median": extremes["median"]},
            f"{total['count']} numbers from {low:g} to {high:g}: mean {mean:g}, "
            f"median {extremes['median']:g}", 1.0)


serve(report)
