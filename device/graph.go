package device

// Graphs: a backend that can capture the work enqueued on a stream into a
// graph and launch it again implements Grapher (CUDA graphs; the CPU backend
// simulates them). A collective refuses a capture it cannot replay, so it
// asks Capturing before it enqueues.

// Grapher is a device whose streams can be captured.
type Grapher interface {
	// BeginCapture starts capturing s: work enqueued on s (and on streams
	// that wait for an event recorded on s while it captures) is recorded,
	// not run, until EndCapture.
	BeginCapture(s Stream) error
	// EndCapture ends the capture begun on s and returns what it recorded,
	// ready to launch. It is called from the goroutine that began the
	// capture (CUDA ends a capture on the thread that began it).
	EndCapture(s Stream) (Graph, error)
}

// Graph is captured work, launched any number of times.
type Graph interface {
	// Launch enqueues the captured work on s, after s's earlier work.
	Launch(s Stream) error
	// Close releases the graph (its launches already enqueued still run).
	Close() error
}

// capturer is a stream that knows whether it is being captured.
type capturer interface {
	Capturing() (bool, error)
}

// Capturing reports whether s is being captured into a graph (false on
// backends without graphs).
func Capturing(s Stream) (bool, error) {
	if c, ok := s.(capturer); ok {
		return c.Capturing()
	}
	return false, nil
}
