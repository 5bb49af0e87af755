"""hiercoll's torch.library operators, for torch.compile.

    hiercoll::reduce_scatter(Tensor input, int ctx) -> Tensor
    hiercoll::matmul_reduce_scatter(Tensor a, Tensor b, int ctx) -> Tensor
    hiercoll::scaled_matmul_reduce_scatter(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, int ctx) -> Tensor
        (per-tensor, row-wise or block-wise scales, told apart by their shapes: scaling.py)

ctx is a ReduceScatter2D's handle (operators take only tensors and plain
values; the context is found by it). Each has a fake implementation that
gives the output's shape, dtype and device without running anything, so
torch.compile(fullgraph=True) traces through them; ReduceScatter2D's
reduce_scatter and matmul_reduce_scatter call them while compiling. Under
mode="reduce-overhead" the compiled graph is replayed as a CUDA graph: make
the context with graphs=True.

register() is called when the package first imports torch. The shape rules
below are plain Python, testable without torch.
"""

_registered = False

# The live contexts by handle: what the operators find a context by, as an
# operator takes only tensors and plain values (ReduceScatter2D adds itself
# here when made and leaves when closed).
contexts = {}


def scattered_shape(rows, cols, world):
    """The output shape of a reduce-scatter of a [rows, cols] input over world
    ranks (rows may be a symbolic size)."""
    return (rows // world, cols)


def matmul_scattered_shape(a_shape, b_shape, world):
    """The output shape of matmul_reduce_scatter(a, b): [M/world, N] for a
    [M, K] and b [K, N]."""
    return (a_shape[0] // world, b_shape[1])


def _context(ctx):
    rs = contexts.get(int(ctx))
    if rs is None:
        from ._lib import HC_ERR_CLOSED, ClosedError
        raise ClosedError(f"hiercoll: {ctx} is not the handle of a live ReduceScatter2D", HC_ERR_CLOSED)
    return rs


def register(torch):
    """Defines the operators (once)."""
    global _registered
    if _registered or not hasattr(torch, "library") or not hasattr(torch.library, "custom_op"):
        return  # torch before 2.4: no custom_op; eager calls still work
    _registered = True
    Tensor = torch.Tensor

    @torch.library.custom_op("hiercoll::reduce_scatter", mutates_args=())
    def reduce_scatter(input: Tensor, ctx: int) -> Tensor:
        input = input.contiguous()
        return _context(ctx).reduce_scatter(input, _eager_output(input, ctx))

    @reduce_scatter.register_fake
    def _(input, ctx):
        return input.new_empty(scattered_shape(input.shape[0], input.shape[1], _context(ctx).world_size))

    @torch.library.custom_op("hiercoll::matmul_reduce_scatter", mutates_args=())
    def matmul_reduce_scatter(a: Tensor, b: Tensor, ctx: int) -> Tensor:
        rs = _context(ctx)
        out = a.new_empty(matmul_scattered_shape(a.shape, b.shape, rs.world_size))
        return rs.matmul_reduce_scatter(a, b, out)

    @matmul_reduce_scatter.register_fake
    def _(a, b, ctx):
        return a.new_empty(matmul_scattered_shape(a.shape, b.shape, _context(ctx).world_size))

    @torch.library.custom_op("hiercoll::scaled_matmul_reduce_scatter", mutates_args=())
    def scaled_matmul_reduce_scatter(a: Tensor, b: Tensor, scale_a: Tensor, scale_b: Tensor, ctx: int) -> Tensor:
        rs = _context(ctx)
        out = a.new_empty(matmul_scattered_shape(a.shape, b.shape, rs.world_size), dtype=getattr(torch, rs.dtype))
        return rs.scaled_matmul_reduce_scatter(a, b, scale_a, scale_b, out)

    @scaled_matmul_reduce_scatter.register_fake
    def _(a, b, scale_a, scale_b, ctx):
        rs = _context(ctx)
        return a.new_empty(matmul_scattered_shape(a.shape, b.shape, rs.world_size), dtype=getattr(torch, rs.dtype))


def _eager_output(input, ctx):
    """The output the operator's eager run fills (given, so that the
    reduce_scatter it calls does not dispatch to the operator again)."""
    rs = _context(ctx)
    return input.new_empty(scattered_shape(input.shape[0], input.shape[1], rs.world_size))
