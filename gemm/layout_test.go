package gemm

import (
	"fmt"
	"go/constant"
	"go/token"
	"go/types"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The kernel's dynamic shared memory is written twice: GM_SMEM in gemm.cu,
// the sum of what the kernel lays out from its defines (stages, staging
// buffer, alignment, barriers, row scales, block scales of B, the sums'
// queue), and gemmShared here, what a launch asks for. Those defines,
// evaluated, must agree with the launch's constants.
func TestKernelLayoutMatchesTheLaunch(t *testing.T) {
	defs := kernelDefines(gemmSource)
	for name, want := range map[string]int64{
		"GM_SMEM": gemmShared, "GM_BM": TileM, "GM_BN": tileN, "GM_BK_BYTES": 2 * tileK,
		"GM_STAGES": gemmStages, "GM_THREADS": gemmThreads, "GM_QUEUE": sumQueue, "GM_BSLOTS": blockScaleBBytes,
	} {
		got, err := evalDefine(defs, name, 0)
		require.NoError(t, err, name)
		require.Equal(t, want, got, "%s in gemm.cu against the launch's constant", name)
	}
}

var defineLine = regexp.MustCompile(`(?m)^#define (GM_\w+) ([^\n]*)$`)
var defineName = regexp.MustCompile(`GM_\w+`)

// kernelDefines is the GM_ object-like macros of src, name to expression,
// comments dropped.
func kernelDefines(src string) map[string]string {
	defs := map[string]string{}
	for _, m := range defineLine.FindAllStringSubmatch(src, -1) {
		expr, _, _ := strings.Cut(m[2], "//")
		defs[m[1]] = strings.TrimSpace(expr)
	}
	return defs
}

// evalDefine evaluates macro name as a Go constant expression, its GM_
// names expanded (depth guards against a cycle).
func evalDefine(defs map[string]string, name string, depth int) (int64, error) {
	expr, ok := defs[name]
	if !ok || depth > 16 {
		return 0, fmt.Errorf("no #define %s (or a cycle)", name)
	}
	var err error
	expanded := defineName.ReplaceAllStringFunc(expr, func(ref string) string {
		v, e := evalDefine(defs, ref, depth+1)
		if e != nil && err == nil {
			err = e
		}
		return fmt.Sprint(v)
	})
	if err != nil {
		return 0, err
	}
	tv, err := types.Eval(token.NewFileSet(), nil, token.NoPos, expanded)
	if err != nil {
		return 0, fmt.Errorf("%s = %s: %w", name, expanded, err)
	}
	v, exact := constant.Int64Val(tv.Value)
	if !exact {
		return 0, fmt.Errorf("%s = %s is not an integer", name, expanded)
	}
	return v, nil
}
