"""The scalings of fp8 operands, in torch's layouts (plain Python: testable without torch).

For a [M, K] and b [K, N] (b the transpose of an [N, K] weight), torch._scaled_mm takes:

    per-tensor  scale_a and scale_b of one float32 each;
    row-wise    scale_a [M, 1], scale_b [1, N] (a scale per row of a, per column of the product);
    block-wise  scale_a [M, ceil(K/128)] (one per 1 x 128 block of a; torch wants it M-major: the
                transpose of a contiguous [K/128, M]) and scale_b [ceil(K/128), ceil(N/128)] (one per
                128 x 128 block of the weight; the transpose of a contiguous [N/128, K/128]).

hiercoll's kernels read the same numbers laid out as hiercoll.h's HC_SCALE_*: row-wise scale_a [M]
and scale_b [N]; block-wise scale_a as a contiguous [K/128, M] and scale_b as a contiguous
[N/128, K/128]. kernel_layout turns torch's tensors into those (no copy when they already lie so: a
row-wise [M, 1], an M-major block-wise scale_a, a block-wise scale_b that is the transpose of a
contiguous tensor). Where the shapes fit two scalings (K <= 128 and N == 1, say) both give the same
product.
"""

from . import _lib

BLOCK = 128  # the side of a block-wise scale's block (and of the fp8 GEMM's k tile)

TENSOR, ROW, BLOCK_WISE = "tensor", "row", "block"
CODES = {TENSOR: _lib.HC_SCALE_TENSOR, ROW: _lib.HC_SCALE_ROW, BLOCK_WISE: _lib.HC_SCALE_BLOCK}


def _blocks(x):
    return (x + BLOCK - 1) // BLOCK


def expected_shapes(scaling, m, n, k):
    """The shapes of scale_a and scale_b that scaling takes for a [m, k] @ b [k, n] (torch's)."""
    if scaling == TENSOR:
        return (1,), (1,)
    if scaling == ROW:
        return (m, 1), (1, n)
    if scaling == BLOCK_WISE:
        return (m, _blocks(k)), (_blocks(k), _blocks(n))
    raise ValueError(f"hiercoll: unknown scaling {scaling!r} (want {TENSOR!r}, {ROW!r} or {BLOCK_WISE!r})")


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def infer(m, n, k, sa_shape, sb_shape):
    """The scaling whose shapes scale_a and scale_b have, for a [m, k] @ b [k, n]: 'tensor' (one
    element each), 'row' (scale_a [m, 1] or [m], scale_b [1, n] or [n]) or 'block' (scale_a
    [m, ceil(k/128)], scale_b [ceil(k/128), ceil(n/128)]); ValueError naming what each takes."""
    sa, sb = tuple(sa_shape), tuple(sb_shape)
    if _numel(sa) == 1 and _numel(sb) == 1 and len(sa) <= 2 and len(sb) <= 2:
        return TENSOR
    if sa in ((m, 1), (m,)) and sb in ((1, n), (n,)):
        return ROW
    if sa == (m, _blocks(k)) and sb == (_blocks(k), _blocks(n)):
        return BLOCK_WISE
    want = "; ".join(f"{s}: scale_a {list(a)} and scale_b {list(b)}"
                     for s in (TENSOR, ROW, BLOCK_WISE) for a, b in [expected_shapes(s, m, n, k)])
    raise ValueError(f"hiercoll: scale_a {list(sa)} and scale_b {list(sb)} fit no scaling of a [{m}, {k}] @ "
                     f"b [{k}, {n}] (float32 scales; {want})")


def kernel_layout(scaling, scale_a, scale_b):
    """scale_a and scale_b (torch tensors of the scaling's shapes) as the kernels read them:
    contiguous, row-wise flattened, block-wise transposed (copies only where needed)."""
    if scaling == ROW:
        return scale_a.reshape(-1).contiguous(), scale_b.reshape(-1).contiguous()
    if scaling == BLOCK_WISE:
        return scale_a.t().contiguous(), scale_b.t().contiguous()
    return scale_a, scale_b
