"""The house style for a CSV summary: a line naming the file and its shape, then one line per numeric
column with its total, its mean and its largest row (named by the first column)."""

import csv


def summarise(path: str) -> None:
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    columns = list(rows[0]) if rows else []
    print(f"House style: {path}, {len(rows)} rows, columns {', '.join(columns)}")
    for column in columns:
        try:
            values = [float(row[column]) for row in rows]
        except ValueError:
            continue
        largest = max(range(len(rows)), key=values.__getitem__)
        mean, label = sum(values) / len(values), rows[largest][columns[0]]
        print(f"- {column}: total {sum(values):g}, mean {mean:g}, largest {label} ({values[largest]:g})")
