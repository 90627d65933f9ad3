package scrub_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/observer/scrub"
	"dshmem/sqlstore/vectors"
)

// TestScrubDropsVectorsOfScrubbedText: a vector is made from text, so
// the text a scrub erases must not stay in index.db as a vector either.
// Before the scrub the forgotten message (with --sources) has a vector;
// after it no row holds that vector, and the forgotten entries have none.
func TestScrubDropsVectorsOfScrubbedText(t *testing.T) {
	m, err := vectors.LoadInstalled(false)
	require.NoError(t, err)
	if m == nil {
		require.NotEqualValues(t, "true", os.Getenv("CI"), "the sentence encoder is needed in CI")
		t.Skip("the sentence encoder is not installed (dshmem model install)")
	}
	ctx := context.Background()
	eng, err := observer.Open(ctx, t.TempDir(), observer.Options{})
	require.NoError(t, err)
	defer eng.Close()
	eng.StartVectors(vectors.NewDense(m), 1)
	a, _, d, _ := fixture(t, eng)
	require.NoError(t, eng.VectorsIdle(ctx))
	dump := func() string {
		var b bytes.Buffer
		require.NoError(t, eng.Store().DumpVectors(ctx, &b))
		return b.String()
	}
	// The row of message m1, which the scrub blanks (--sources).
	var seq uint64
	require.NoError(t, eng.Log().Scan(observer.StreamForCwd(cwd), 1, func(e events.Envelope) error {
		if e.ID == "m1" {
			seq = e.Seq
		}
		return nil
	}))
	key := fmt.Sprintf(`["episode",%q,%d,`, observer.StreamForCwd(cwd), seq)
	var code string
	for _, l := range strings.Split(dump(), "\n") {
		if strings.Contains(l, key) {
			code = l[strings.LastIndex(l, ",")+1:]
		}
	}
	require.NotEmpty(t, code, "message m1 has no vector before the scrub:\n%s", dump())

	_, err = scrub.Run(ctx, eng, scrub.Options{Sources: true})
	require.NoError(t, err)
	require.NoError(t, eng.VectorsIdle(ctx)) // scrub asked the fill to look again
	after := dump()
	assert.NotContains(t, after, code, "the scrubbed message's vector is still in the index")
	assert.NotContains(t, after, a, "the forgotten entry has a vector")
	assert.NotContains(t, after, d, "the forgotten entry has a vector")
	assert.Contains(t, after, `"episode"`, "the kept text lost its vectors for good")
}
