import csv, gzip, sys, collections
# stalls.py FILE.csv.gz: total warp samples by reason and the top instructions (as the fortieth session's stalls files)
rows = list(csv.reader(gzip.open(sys.argv[1], 'rt')))
name = rows[0][1]
hdr = rows[1]
ix = {h: i for i, h in enumerate(hdr)}
reasons = [h for h in hdr if h.startswith('stall_') and '(Not Issued)' not in h]
tot = collections.Counter()
ins = []
for r in rows[2:]:
    if len(r) < len(hdr): continue
    try: n = int(r[ix['Warp Stall Sampling (All Samples)']])
    except: continue
    by = {k: int(r[ix[k]]) for k in reasons if r[ix[k]] not in ('', '-', '0')}
    tot.update(by)
    ins.append((n, r[ix['Address']][-5:], r[ix['Source']].strip(), sorted(by.items(), key=lambda x: -x[1])[:2]))
S = sum(tot.values())
print(f"# {name}: samples {S} by reason: " + ", ".join(f"{k} {v}" for k, v in tot.most_common()))
for n, a, s, b in sorted(ins, reverse=True)[:int(sys.argv[2]) if len(sys.argv) > 2 else 14]:
    print(f"{n:7d} {100*n/S:5.1f}% {a}  {s[:62]:62s} {b}")
