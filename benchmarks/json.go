package benchmarks

import (
	"encoding/json"
	"io"

	"github.com/seed12530e24/hiercoll/dtype"
)

// benchJSON is a BenchRow as one JSON object (times in microseconds; NCCL's
// fields left out where NCCL did not run).
type benchJSON struct {
	Variant      string   `json:"variant"`
	Bytes        int64    `json:"bytes_per_rank"`
	Count        int64    `json:"count"`
	DType        string   `json:"dtype"`
	M            int      `json:"m"`
	N            int      `json:"n"`
	World        int      `json:"world"`
	US           float64  `json:"hiercoll_us"`
	USMin        float64  `json:"hiercoll_us_min"`
	USMax        float64  `json:"hiercoll_us_max"`
	BusBW        float64  `json:"hiercoll_busbw_gbps"`
	NCCLUS       *float64 `json:"nccl_us,omitempty"`
	NCCLUSMin    *float64 `json:"nccl_us_min,omitempty"`
	NCCLUSMax    *float64 `json:"nccl_us_max,omitempty"`
	NCCLBusBW    *float64 `json:"nccl_busbw_gbps,omitempty"`
	MaxDiffVsNCL *float64 `json:"max_abs_diff_vs_nccl,omitempty"`
	Simulated    bool     `json:"simulated"`
	Captured     bool     `json:"captured"`
}

// WriteJSON writes the rows as JSON, one object per line.
func WriteJSON(w io.Writer, rows []BenchRow, world int, dt dtype.DType) error {
	enc := json.NewEncoder(w)
	for _, r := range rows {
		j := benchJSON{Variant: r.Variant, Bytes: r.Bytes, Count: r.Count, DType: dt.String(), M: r.M, N: r.N, World: world,
			US: us(r.Time), USMin: us(r.TimeMin), USMax: us(r.TimeMax), BusBW: r.BusBW(r.Time, world), Simulated: r.Simulated,
			Captured: r.Captured}
		if r.NCCLTime > 0 {
			j.NCCLUS, j.NCCLUSMin, j.NCCLUSMax = ptr(us(r.NCCLTime)), ptr(us(r.NCCLMin)), ptr(us(r.NCCLMax))
			j.NCCLBusBW = ptr(r.BusBW(r.NCCLTime, world))
		}
		if r.Checked {
			j.MaxDiffVsNCL = ptr(r.MaxErr)
		}
		if err := enc.Encode(j); err != nil {
			return err
		}
	}
	return nil
}

// gemmJSON is a GemmRow as one JSON object (times in microseconds; a
// skipped shape has its reason and no times).
type gemmJSON struct {
	M         int      `json:"m"`
	N         int      `json:"n"`
	K         int      `json:"k"`
	KLocal    int      `json:"k_local"`
	World     int      `json:"world"`
	DType     string   `json:"dtype"`
	Skipped   string   `json:"skipped,omitempty"`
	Gemm      *float64 `json:"gemm_us,omitempty"`
	TFLOPS    *float64 `json:"gemm_tflops,omitempty"`
	RS        *float64 `json:"rs_us,omitempty"`
	RSAuto    *float64 `json:"rs_auto_us,omitempty"`
	GemmNCCL  *float64 `json:"gemm_nccl_us,omitempty"`
	GemmRS    *float64 `json:"gemm_rs_us,omitempty"`
	Overlap   *float64 `json:"overlap_us,omitempty"`
	OverBound *float64 `json:"overlap_over_bound,omitempty"`
	// OverBoundRounds is OverBound round by round (GemmRow.OverBoundRounds).
	OverBoundRounds []float64 `json:"overlap_over_bound_rounds,omitempty"`
	Picks           string    `json:"picks,omitempty"`
	GemmKind        string    `json:"gemm,omitempty"`
	BoundUse        *float64  `json:"bound_use,omitempty"`
	Captured        bool      `json:"captured"`
	Simulated       bool      `json:"simulated"`
}

// WriteGemmJSON writes the rows as JSON, one object per line.
func WriteGemmJSON(w io.Writer, rows []GemmRow, world int, dt dtype.DType) error {
	enc := json.NewEncoder(w)
	for _, r := range rows {
		j := gemmJSON{M: r.Shape.M, N: r.Shape.N, K: r.Shape.K, KLocal: r.KLocal, World: world, DType: dt.String(),
			Skipped: r.Skipped, Captured: r.Captured, Simulated: r.Simulated}
		if r.Skipped == "" {
			j.Gemm, j.TFLOPS, j.RS, j.RSAuto = ptr(us(r.Gemm)), ptr(r.TFLOPS()), ptr(us(r.RS)), ptr(us(r.RSAuto))
			j.OverBound, j.OverBoundRounds = ptr(r.OverBound()), r.OverBoundRounds
			j.GemmRS, j.Overlap, j.BoundUse = ptr(us(r.Sequential)), ptr(us(r.Overlap)), ptr(r.BoundUse)
			if r.GemmNCCL > 0 {
				j.GemmNCCL = ptr(us(r.GemmNCCL))
			}
			j.Picks, j.GemmKind = r.Picks.String(), r.Choice.String()
		}
		if err := enc.Encode(j); err != nil {
			return err
		}
	}
	return nil
}

func ptr(v float64) *float64 { return &v }
