package plot_test

import (
	"io"
	"log"

	"github.com/seed12530e24/hiercoll/internal/plot"
)

func ExampleChart_PNG() {
	sizes := []float64{8 << 20, 32 << 20, 128 << 20, 512 << 20, 2 << 30}
	chart := plot.Chart{
		Title:  "reduce-scatter, 4 GPUs, bf16",
		XLabel: "bytes per rank",
		YLabel: "bus bandwidth (GB/s)",
		LogX:   true,
		Series: []plot.Series{
			{Name: "NCCL", X: sizes, Y: []float64{44, 239, 289, 311, 336}},
			{Name: "hiercoll", X: sizes, Y: []float64{120, 250, 300, 330, 350}},
		},
	}
	// Write to a file (os.Create) in real use.
	if err := chart.PNG(io.Discard); err != nil {
		log.Fatal(err)
	}
}
