package device

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func envOf(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

// Every condition of the gate refuses on its own, and the error names it.
func TestMulticastGateConditions(t *testing.T) {
	gpu := Info{Backend: "cuda", Multicast: true}
	allowed := map[string]string{AllowMulticastEnv: "1"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range allowed {
			out[k] = v
		}
		for k, v := range extra {
			if v == "<unset>" {
				delete(out, k)
			} else {
				out[k] = v
			}
		}
		return out
	}
	cases := []struct {
		name string
		by   string
		info Info
		env  map[string]string
		want string // a fragment of the refusal; "" when allowed
	}{
		{"all hold", "engine nvls", gpu, allowed, ""},
		{"not named", "", gpu, allowed, "nobody asked for it by name"},
		{"blank name", "  ", gpu, allowed, "nobody asked for it by name"},
		{"no opt-in", "engine nvls", gpu, with(map[string]string{AllowMulticastEnv: "<unset>"}), "HIERCOLL_ALLOW_MULTICAST=1 is not set"},
		{"opt-in not 1", "engine nvls", gpu, with(map[string]string{AllowMulticastEnv: "yes"}), "HIERCOLL_ALLOW_MULTICAST=1 is not set"},
		{"NCCL off", "engine nvls", gpu, with(map[string]string{"NCCL_NVLS_ENABLE": "0"}), "NCCL_NVLS_ENABLE=0 is set"},
		{"NCCL off, unparsable", "engine nvls", gpu, with(map[string]string{"NCCL_NVLS_ENABLE": "off"}), "NCCL_NVLS_ENABLE=off is set"},
		{"NCCL on", "engine nvls", gpu, with(map[string]string{"NCCL_NVLS_ENABLE": "1"}), ""},
		{"NVSHMEM off", "engine nvls", gpu, with(map[string]string{"NVSHMEM_DISABLE_NVLS": "1"}), "NVSHMEM_DISABLE_NVLS=1 is set"},
		{"NVSHMEM off, empty", "engine nvls", gpu, with(map[string]string{"NVSHMEM_DISABLE_NVLS": ""}), "NVSHMEM_DISABLE_NVLS= is set"},
		{"NVSHMEM on", "engine nvls", gpu, with(map[string]string{"NVSHMEM_DISABLE_NVLS": "0"}), ""},
		{"torch off", "engine nvls", gpu, with(map[string]string{"TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}), "TORCH_SYMM_MEM_DISABLE_MULTICAST=1 is set"},
		{"torch on", "engine nvls", gpu, with(map[string]string{"TORCH_SYMM_MEM_DISABLE_MULTICAST": "false"}), ""},
		{"no attribute", "engine nvls", Info{Backend: "cuda"}, allowed, "MULTICAST_SUPPORTED=1"},
		{"sim needs only the name", "engine nvls", Info{Backend: "sim"}, map[string]string{"NCCL_NVLS_ENABLE": "0"}, ""},
		{"sim not named", "", Info{Backend: "sim", Multicast: true}, allowed, "nobody asked for it by name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := multicastGate(c.by, c.info, envOf(c.env))
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrNotSupported)
			require.Contains(t, err.Error(), c.want)
		})
	}
	// Several refusals are all named.
	err := multicastGate("", Info{Backend: "cuda"}, envOf(map[string]string{"NCCL_NVLS_ENABLE": "0", "NVSHMEM_DISABLE_NVLS": "1",
		"TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}))
	require.ErrorIs(t, err, ErrNotSupported)
	require.Equal(t, 6, strings.Count(err.Error(), ";")+1, "%v", err)
}

// fakeMC is a device that reports a Multicaster (its methods do nothing).
type fakeMC struct {
	Device
	info Info
}

func (f *fakeMC) Name() string { return "fake" }
func (f *fakeMC) Info() Info   { return f.info }
func (f *fakeMC) MulticastGranularity(Permit, int) (int64, error) {
	return 0, errors.New("not here")
}
func (f *fakeMC) CreateMulticast(Permit, int, int64) (Multicast, error) {
	return nil, errors.New("not here")
}
func (f *fakeMC) ImportMulticast(Permit, []byte) (Multicast, error) {
	return nil, errors.New("not here")
}

// A permit comes only from the gate, holds only for its device, and is
// checked against the environment again when used.
func TestPermit(t *testing.T) {
	for _, k := range []string{"NCCL_NVLS_ENABLE", "NVSHMEM_DISABLE_NVLS", "TORCH_SYMM_MEM_DISABLE_MULTICAST"} {
		t.Setenv(k, "x")
		require.NoError(t, os.Unsetenv(k)) // t.Setenv restores it afterwards
	}
	t.Setenv(AllowMulticastEnv, "1")
	d := &fakeMC{info: Info{Backend: "cuda", Multicast: true}}
	other := &fakeMC{info: Info{Backend: "cuda", Multicast: true}}
	noMC := &fakeMC{info: Info{Backend: "cuda"}}

	require.ErrorIs(t, Permit{}.Check(d), ErrNotSupported, "the zero permit allows nothing")
	_, err := AllowMulticast(d, "")
	require.ErrorIs(t, err, ErrNotSupported)

	p, err := AllowMulticast(d, "test")
	require.NoError(t, err)
	require.NoError(t, p.Check(d))
	require.NoError(t, p.Check(other))
	err = p.Check(noMC)
	require.ErrorIs(t, err, ErrNotSupported, "the gate runs again for the device the permit is used on")
	require.Contains(t, err.Error(), "MULTICAST_SUPPORTED=1")

	t.Setenv("NCCL_NVLS_ENABLE", "0")
	err = p.Check(d)
	require.ErrorIs(t, err, ErrNotSupported, "the environment is read again")
	require.Contains(t, err.Error(), "NCCL_NVLS_ENABLE=0")

	// A backend without a Multicaster gets no permit.
	require.NoError(t, os.Unsetenv("NCCL_NVLS_ENABLE"))
	_, err = AllowMulticast(plainDevice{d}, "test")
	require.ErrorIs(t, err, ErrNotSupported)
	require.Contains(t, err.Error(), "cannot create multicast objects")
}

// plainDevice hides fakeMC's Multicaster.
type plainDevice struct{ f *fakeMC }

func (p plainDevice) Name() string { return p.f.Name() }
func (p plainDevice) Info() Info   { return p.f.Info() }

// The rest of Device is never called by the gate.
func (p plainDevice) Alloc(int64) (Ptr, error)                    { panic("unused") }
func (p plainDevice) Free(Ptr) error                              { panic("unused") }
func (p plainDevice) CopyToDevice(Ptr, []byte) error              { panic("unused") }
func (p plainDevice) CopyToHost([]byte, Ptr) error                { panic("unused") }
func (p plainDevice) AddressRange(Ptr) (Ptr, int64, error)        { panic("unused") }
func (p plainDevice) ExportMem(Ptr) ([]byte, error)               { panic("unused") }
func (p plainDevice) OpenPeer([]byte) (Ptr, error)                { panic("unused") }
func (p plainDevice) ClosePeer(Ptr) error                         { panic("unused") }
func (p plainDevice) NewStream(Priority) (Stream, error)          { panic("unused") }
func (p plainDevice) StreamFromHandle(uintptr) (Stream, error)    { panic("unused") }
func (p plainDevice) NewEvent() (Event, error)                    { panic("unused") }
func (p plainDevice) NewTimedEvent() (Event, error)               { panic("unused") }
func (p plainDevice) Copy(Stream, Ptr, Ptr, int64) error          { panic("unused") }
func (p plainDevice) Memset32(Stream, Ptr, uint32, int64) error   { panic("unused") }
func (p plainDevice) WaitValue32(Stream, Word, Cmp, uint32) error { panic("unused") }
func (p plainDevice) WriteValue32(Stream, Ptr, uint32) error      { panic("unused") }
func (p plainDevice) Launch(Stream, *Kernel, int, ...any) error   { panic("unused") }
func (p plainDevice) Prepare(*Kernel) error                       { panic("unused") }
func (p plainDevice) Close() error                                { panic("unused") }
