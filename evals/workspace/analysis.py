"""Revenue by region, from data/sales.csv."""

import csv


def revenue_by_region(path: str) -> dict[str, int]:
    totals: dict[str, int] = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            # TODO: handle rows with a missing revenue
            totals[row["region"]] = totals.get(row["region"], 0) + int(row["revenue"])
    return totals
