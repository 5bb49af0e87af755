package dl

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// SafeEnv is an environment variable a native library reads that, at some
// values, would have it create NVLink multicast objects, which hiercoll never
// does (DESIGN.md, safety rule).
type SafeEnv struct {
	Pkg, Lib string // the loader ("nccl") and the library as prose names it ("NCCL")
	Name     string // e.g. "NCCL_NVLS_ENABLE"
	Off      string // the value that keeps multicast off, set when the variable is unset
	// Safe reports whether the library reads v as keeping multicast off,
	// parsing it as the library does.
	Safe func(v string) bool
}

// Ensure sets the variable to Off when it is unset, keeps a safe value and
// refuses any other (hcerr.ErrNotSupported), before the library is loaded.
func (e SafeEnv) Ensure(lookup func(string) (string, bool), set func(k, v string) error) error {
	v, ok := lookup(e.Name)
	if !ok {
		if err := set(e.Name, e.Off); err != nil {
			return fmt.Errorf("%s: setting %s=%s: %w", e.Pkg, e.Name, e.Off, err)
		}
		return nil
	}
	if e.Safe(v) {
		return nil
	}
	return fmt.Errorf("%s: %s=%q would let %s create NVLink multicast objects, which hiercoll never does "+
		"(see DESIGN.md, safety rule); unset it or set it to %s: %w", e.Pkg, e.Name, v, e.Lib, e.Off, hcerr.ErrNotSupported)
}
