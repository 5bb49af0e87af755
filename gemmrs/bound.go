package gemmrs

import (
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/rs2d"
)

// Tolerance is the largest error one output element of a call may have:
// the bound on |out[i,j] − Σ_r Σ_k A_r[i,k]·B_r[k,j]| (the exact sum of the
// products of the inputs as stored in dt) given absSum = Σ_r Σ_k
// |A_r[i,k]·B_r[k,j]|, for world ranks on nodes nodes, each with kLocal
// terms. With u the unit roundoff of dt and u32 that of fp32 (2^-24):
//
//   - GEMM, per rank r: the products of bf16 or fp16 operands are exact in
//     fp32; kLocal−1 fp32 additions in any order err by at most
//     (kLocal−1)·u32·S_r, S_r = Σ_k |a·b|. That is doubled here, γ =
//     2·kLocal·u32, because tensor cores may truncate rather than round in
//     their accumulations (fp32 operands add one rounding per product:
//     γ += kLocal·u32). Rounding the fp32 sum (at most (1+γ)·S_r in
//     magnitude) to dt adds u·(1+γ)·S_r. So |Ĉ_r − C_r| ≤ (u(1+γ) + γ)·S_r.
//   - Reduce-scatter of the Ĉ_r: fp32 sums of world terms, rounded to dt
//     rounds = rs2d.Roundings(nodes) times on the way (internal/check's
//     bound): ≤ (rounds·u + world·u32)·Σ_r |Ĉ_r|, with |Ĉ_r| ≤
//     (1+u)(1+γ)·S_r.
//   - Absolute terms for results near zero: half an fp16 subnormal step
//     (2^-25) per rounding to dt (world GEMM outputs, rounds sums), and
//     internal/check's 2^-24.
//
// Summing, with absSum = Σ_r S_r:
//
//	tol = [u(1+γ) + γ + (rounds·u + world·u32)(1+u)(1+γ)]·absSum + (world+rounds)·2^-25 + 2^-24
func Tolerance(dt dtype.DType, kLocal, world, nodes int, absSum float64) float64 {
	const u32 = 1.0 / (1 << 24)
	u := dt.UnitRoundoff()
	gamma := 2 * float64(kLocal) * u32
	if dt == dtype.F32 {
		gamma += float64(kLocal) * u32
	}
	rounds := float64(rs2d.Roundings(nodes))
	rel := u*(1+gamma) + gamma + (rounds*u+float64(world)*u32)*(1+u)*(1+gamma)
	return rel*absSum + (float64(world)+rounds)/(1<<25) + u32
}
