package hcerr

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuote(t *testing.T) {
	require.Equal(t, `"node-1"`, Quote("node-1"))
	require.Equal(t, `"a\nb"`, Quote("a\nb"))
	short := strings.Repeat("x", QuoteLimit)
	require.Equal(t, `"`+short+`"`, Quote(short))

	huge := strings.Repeat("y", 64<<20)
	q := Quote(huge)
	require.Less(t, len(q), 2*QuoteLimit, "a 64 MiB value quotes as a line")
	require.True(t, strings.HasPrefix(q, `"yyyy`))
	require.Contains(t, q, "(67108864 bytes)")
	require.Equal(t, q, QuoteBytes([]byte(huge)))

	// Invalid UTF-8 and control bytes are escaped, never copied raw.
	bin := string([]byte{0xff, 0x00, 0x1b}) + strings.Repeat("\x07", 100)
	q = Quote(bin)
	require.NotContains(t, q, "\x1b")
	require.NotContains(t, q, "\x07")
	require.Contains(t, q, "(103 bytes)")
}
