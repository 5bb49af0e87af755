# run05-waits.py SASS.csv.gz...: each mbarrier wait (SYNCS.PHASECHK TRYWAIT) of a kernel's Nsight Compute source page,
# its executions (warp level; a retry executes it again) and the warp samples on the branch that retries it.
import csv, gzip, sys
for f in sys.argv[1:]:
    rows = list(csv.reader(gzip.open(f, 'rt')))
    hdr = rows[1]
    ie, ns = hdr.index('Instructions Executed'), hdr.index('Warp Stall Sampling (All Samples)')
    tot = sum(int(r[ns]) for r in rows[2:] if len(r) > ns and r[ns].isdigit())
    print(f"== {f}: {tot} warp samples")
    for i, r in enumerate(rows):
        if len(r) > 1 and 'TRYWAIT' in r[1]:
            br = next((q for q in rows[i + 1:i + 3] if 'BRA' in q[1]), None)
            n = int(br[ns]) if br else 0
            print(f"  {r[0][-5:]} {r[1].strip()[:52]:52s} executed {r[ie]:>8s}  retry-branch samples {n:6d} ({100 * n / tot:4.1f}%)")
