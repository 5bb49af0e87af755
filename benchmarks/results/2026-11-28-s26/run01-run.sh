#!/usr/bin/env bash
# s26 run01 (nvidia-h200-x4): GEMM GPU tests of exp/sum4 (s4, on main a01490c) and exp/sum4-each (se), then
# bench-gemm --gemm own at issue 30's seven shapes, builds in turn se s4 m sen, sen m s4 se (sen: se + summed-nowait).
set -uo pipefail
source scripts/gpu-env.sh
tar xJf build/pk.txz -C build
L=$OUT/logs; mkdir -p $L; cp .s26-run01.sh $L/run.sh
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
ok=""
for b in s4 se; do t0=$SECONDS
	(cd gemm && timeout 130 ../build/$b/gemm.test -test.run 'TestGemmCompilesAndLoadsOnGPU|TestGemmSumOnGPU' -test.v > $L/$b-gemm-gpu-tests.txt 2>&1); rc=$?
	echo "$b gemm tests rc=$rc $((SECONDS-t0))s"; grep -E "^(--- |ok|FAIL|PASS)|local memory" $L/$b-gemm-gpu-tests.txt | head -14
	grep -q -- "--- FAIL" $L/$b-gemm-gpu-tests.txt || [ $rc -ne 0 ] || ok="$ok $b"
done
echo "passed:$ok"
S=8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
i=0
for b in se s4 m sen sen m s4 se; do i=$((i+1)); t0=$SECONDS
	case "$b" in m) ;; sen) [[ "$ok" == *se* ]] || continue;; *) [[ "$ok" == *$b* ]] || continue;; esac
	[ $(left) -lt 100 ] && { echo "skip $b $i"; continue; }
	timeout 130 build/$b/hiercoll bench-gemm --gemm own --shapes $S > $L/bf16-$b-$i.txt 2>&1
	echo "$b $i rc=$? $((SECONDS-t0))s"; grep -E '^[0-9]+x[0-9]+x[0-9]+ ' $L/bf16-$b-$i.txt | awk '{printf "%s %s | ", $1, $9}'; echo
	grep -o 'ovl/bound by round [0-9.]* \[[0-9.]*\.\.[0-9.]*\]' $L/bf16-$b-$i.txt | sed 's/ovl\/bound by round //' | tr '\n' ' '; echo
	grep -c "own block summed in the GEMM" $L/bf16-$b-$i.txt; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
