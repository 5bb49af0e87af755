#!/usr/bin/env python3
"""Warp stall samples by SASS instruction from an Nsight Compute source page (csv, gzip): .s33-stalls.py FILE [N]"""
import csv, gzip, sys
rows = list(csv.reader(gzip.open(sys.argv[1], "rt")))
n = int(sys.argv[2]) if len(sys.argv) > 2 else 30
head = rows[1]
reasons = [i for i, h in enumerate(head) if h.startswith("stall_") and "(Not Issued)" not in h]
tot = {}
items = []
for r in rows[2:]:
    if len(r) < len(head):
        continue
    s = int(r[2] or 0)
    per = [(head[i], int(r[i] or 0)) for i in reasons]
    for k, v in per:
        tot[k] = tot.get(k, 0) + v
    items.append((s, r[0][-5:], r[1].strip(), sorted([p for p in per if p[1]], key=lambda p: -p[1])[:2]))
print(f"# {rows[0][1]}: samples {sum(tot.values())} by reason: " + ", ".join(f"{k} {v}" for k, v in sorted(tot.items(), key=lambda kv: -kv[1]) if v))
for s, a, src, top in sorted(items, key=lambda t: -t[0])[:n]:
    print(f"{s:7d} {a}  {src[:60]:60s} {top}")
