#!/usr/bin/env python3
"""Samples per SASS instruction in address order over [lo, hi] (hex, last 5 digits): .s33-range.py FILE lo hi"""
import csv, gzip, sys
rows = list(csv.reader(gzip.open(sys.argv[1], "rt")))
head = rows[1]
lo, hi = int(sys.argv[2], 16), int(sys.argv[3], 16)
reasons = [i for i, h in enumerate(head) if h.startswith("stall_") and "(Not Issued)" not in h]
tot, sub = {}, 0
for r in rows[2:]:
    if len(r) < len(head):
        continue
    a = int(r[0], 16) & 0xFFFFF
    if not lo <= a <= hi:
        continue
    s = int(r[2] or 0); sub += s
    per = sorted([(head[i][6:], int(r[i] or 0)) for i in reasons if int(r[i] or 0)], key=lambda p: -p[1])
    for k, v in per:
        tot[k] = tot.get(k, 0) + v
    print(f"{a:05x} {s:6d} {r[5]:>8s}  {r[1].strip()[:58]:58s} {per[:3]}")
print(f"# range total {sub}: " + ", ".join(f"{k} {v}" for k, v in sorted(tot.items(), key=lambda kv: -kv[1])))
