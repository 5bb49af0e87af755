// Package fdpass hands a file descriptor to other processes of the same
// user on this host: what a CUDA POSIX-fd handle (an exported multicast
// object) needs to reach the other ranks of a node, since a descriptor's
// number means nothing in another process.
//
// The owner offers the descriptor on a Unix socket under a random name
// (Linux: in the abstract namespace, no file), to a fixed number of takers,
// each of which must present the offer's random token; the kernel duplicates
// the descriptor into the taker (SCM_RIGHTS). Name and token travel through
// the job's authenticated bootstrap. An offer ends when every taker has
// taken it, when it is closed, or at its deadline: nothing waits unbounded.
package fdpass

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// TokenSize is the length of an offer's token.
const TokenSize = 16

// Offer serves one descriptor to a fixed number of takers.
type Offer struct {
	name  string
	token [TokenSize]byte
	ln    *net.UnixListener
	fd    int // the offer's own duplicate, closed when the offer ends

	once sync.Once
	done chan struct{}
	mu   sync.Mutex
	err  error
}

// NewOffer offers a duplicate of fd (the caller keeps its own) to takers
// takers until timeout.
func NewOffer(fd, takers int, timeout time.Duration) (*Offer, error) {
	if takers < 0 || timeout <= 0 {
		return nil, fmt.Errorf("fdpass: offer to %d takers within %v: %w", takers, timeout, hcerr.ErrInvalidArgument)
	}
	o := &Offer{done: make(chan struct{})}
	if _, err := rand.Read(o.token[:]); err != nil {
		return nil, fmt.Errorf("fdpass: token: %w", err)
	}
	var id [12]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("fdpass: name: %w", err)
	}
	o.name = "hiercoll-fd-" + hex.EncodeToString(id[:])
	if runtime.GOOS == "linux" {
		o.name = "@" + o.name // the abstract namespace: no file to clean up
	} else {
		o.name = filepath.Join(os.TempDir(), o.name)
	}
	dup, err := syscall.Dup(fd)
	if err != nil {
		return nil, fmt.Errorf("fdpass: duplicating descriptor %d: %w", fd, err)
	}
	syscall.CloseOnExec(dup)
	o.fd = dup
	o.ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: o.name, Net: "unix"})
	if err != nil {
		syscall.Close(dup)
		return nil, fmt.Errorf("fdpass: listening on %s: %w", o.name, err)
	}
	if err := o.ln.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, errors.Join(fmt.Errorf("fdpass: %w", err), o.Close())
	}
	go o.serve(takers)
	return o, nil
}

// Name is the socket's name, for the takers.
func (o *Offer) Name() string { return o.name }

// Token is the secret a taker presents.
func (o *Offer) Token() []byte { return append([]byte(nil), o.token[:]...) }

func (o *Offer) serve(takers int) {
	defer o.Close()
	for served := 0; served < takers; {
		c, err := o.ln.AcceptUnix()
		if err != nil {
			select {
			case <-o.done:
			default:
				o.setErr(fmt.Errorf("fdpass: %s: %d of %d takers served: %w", o.name, served, takers, err))
			}
			return
		}
		if o.give(c) {
			served++
		}
	}
}

// give hands the descriptor over c to a taker that presents the token (and,
// on Linux, runs as the same user).
func (o *Offer) give(c *net.UnixConn) bool {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if !sameUser(c) {
		return false
	}
	var got [TokenSize]byte
	if _, err := io.ReadFull(c, got[:]); err != nil || subtle.ConstantTimeCompare(got[:], o.token[:]) != 1 {
		return false
	}
	_, _, err := c.WriteMsgUnix([]byte{1}, syscall.UnixRights(o.fd), nil)
	return err == nil
}

func (o *Offer) setErr(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		o.err = err
	}
}

// Err is why the offer ended before every taker took it, if it did.
func (o *Offer) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// Close ends the offer: no more takers are served.
func (o *Offer) Close() error {
	var err error
	o.once.Do(func() {
		close(o.done)
		err = o.ln.Close()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
		err = errors.Join(err, syscall.Close(o.fd))
	})
	return err
}

// Take fetches the descriptor offered under name with token, waiting at
// most timeout. The caller owns (and closes) the descriptor returned.
func Take(name string, token []byte, timeout time.Duration) (int, error) {
	if len(token) != TokenSize {
		return -1, fmt.Errorf("fdpass: token of %d bytes, want %d: %w", len(token), TokenSize, hcerr.ErrInvalidArgument)
	}
	c, err := net.DialTimeout("unix", name, timeout)
	if err != nil {
		return -1, fmt.Errorf("fdpass: reaching the offer %s: %w", name, errors.Join(err, hcerr.ErrPeer))
	}
	uc := c.(*net.UnixConn)
	defer uc.Close()
	_ = uc.SetDeadline(time.Now().Add(timeout))
	if _, err := uc.Write(token); err != nil {
		return -1, fmt.Errorf("fdpass: %s: %w", name, err)
	}
	buf := make([]byte, 1)
	oob := make([]byte, syscall.CmsgSpace(4))
	_, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		return -1, fmt.Errorf("fdpass: %s: no descriptor came (a wrong token is refused): %w", name, errors.Join(err, hcerr.ErrPeer))
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("fdpass: %s: no descriptor came (a wrong token is refused): %w", name, hcerr.ErrPeer)
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return -1, fmt.Errorf("fdpass: %s: a bad descriptor message: %w", name, hcerr.ErrPeer)
	}
	syscall.CloseOnExec(fds[0])
	return fds[0], nil
}
