#!/usr/bin/env python3
"""s33 experiment: rewrite the yield hint of the block-wise kernels' promotion FFMAs in a cached CUBIN.

  .s33-yield.py CACHEFILE MODE      # MODE: odd (every other FFMA of a run yields) or all (every one does)

A run is 16 or more consecutive register-form FFMAs (the promotions: 32 a quarter). Each instruction is 16 bytes,
its high little-endian word holding the control bits: bit 45 the yield hint (ptxas leaves it 1 on the FFMAs; 0 lets
the scheduler switch warps after the instruction), bits 58-61 the operand reuse flags. An instruction made to yield
also has its reuse flags cleared, so that no later instruction counts on an operand cached across a switch.
The cache entry (magic, sha256 of the CUBIN, CUBIN) is rewritten with the new checksum.
"""
import hashlib
import struct
import sys

MAGIC = b"hiercoll-cubin-1\n"
YIELD = 1 << 45
REUSE = 0xF << 58


def sections(elf):
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    hdrs = []
    for i in range(shnum):
        name, typ, flags, addr, off, size = struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize)
        hdrs.append((name, off, size))
    stroff = hdrs[shstrndx][1]
    for name, off, size in hdrs:
        end = elf.index(b"\0", stroff + name)
        yield elf[stroff + name:end].decode(), off, size


def patch(cubin, mode):
    out = bytearray(cubin)
    report = []
    for name, off, size in sections(cubin):
        if not (name.startswith(".text.hc_gemm_e4m3") and "_block" in name):
            continue
        n = size // 16
        is_ffma = [struct.unpack_from("<Q", cubin, off + 16 * i)[0] & 0xFFF == 0x223 for i in range(n)]
        runs, changed, i = 0, 0, 0
        while i < n:
            if not is_ffma[i]:
                i += 1
                continue
            j = i
            while j < n and is_ffma[j]:
                j += 1
            if j - i >= 16:
                runs += 1
                for k in range(i, j):
                    if mode == "odd" and (k - i) % 2 == 0:
                        continue
                    at = off + 16 * k + 8
                    hi, = struct.unpack_from("<Q", out, at)
                    struct.pack_into("<Q", out, at, (hi & ~YIELD) & ~REUSE)
                    changed += 1
            i = j
        report.append(f"{name}: {runs} runs, {changed} FFMAs changed")
    return bytes(out), report


def main():
    path, mode = sys.argv[1], sys.argv[2]
    entry = open(path, "rb").read()
    head = len(MAGIC) + 32
    assert entry[:len(MAGIC)] == MAGIC and hashlib.sha256(entry[head:]).digest() == entry[len(MAGIC):head]
    cubin, report = patch(entry[head:], mode)
    open(path, "wb").write(MAGIC + hashlib.sha256(cubin).digest() + cubin)
    print("\n".join(report))


if __name__ == "__main__":
    main()
