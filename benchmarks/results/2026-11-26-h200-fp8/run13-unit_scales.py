import torch, hiercoll
torch.cuda.set_device(0)
hiercoll.init()
a = torch.randn(256, 512, device="cuda").to(torch.float8_e4m3fn)
w = torch.randn(384, 512, device="cuda").to(torch.float8_e4m3fn)
one = torch.ones(1, device="cuda")
c0 = hiercoll.gemm(a, w.t())
c1 = hiercoll.gemm(a, w.t(), one, one)
ref = a.double() @ w.double().t()
torch.cuda.synchronize()
assert torch.equal(c0, c1), "None scales differ from unit scales"
err = (c0.double() - ref).abs().max().item()
print("max err vs fp64", err, "max |ref|", ref.abs().max().item())
assert err <= 2**-7 * ref.abs().max().item() + 1
print("ok")
hiercoll.finalize()
