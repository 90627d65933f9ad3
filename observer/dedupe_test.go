package observer

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReusedID: an id names one event. The same event sent again is a
// duplicate; another event under that id is refused with an error that
// names the id and the seq holding it, whether the first is in the index,
// earlier in the same call, or dshmem's own operation key (which a retry
// reuses with a new time, and stays a duplicate).
func TestReusedID(t *testing.T) {
	ctx := context.Background()
	eng, err := Open(ctx, t.TempDir(), Options{})
	require.NoError(t, err)
	defer eng.Close()
	line := func(id, text string) []byte {
		return []byte(`{"id":"` + id + `","type":"user/message","time":"2026-08-18T10:00:00Z","session":"s","cwd":"/home/u/reuse","data":{"text":"` + text + `"}}`)
	}
	res, _, err := eng.Ingest(ctx, [][]byte{line("u:1", "first"), line("u:2", "second")})
	require.NoError(t, err)
	require.Equal(t, 2, res.Appended)

	res, outs, err := eng.Ingest(ctx, [][]byte{line("u:1", "first"), line("u:2", "not the second")})
	require.NoError(t, err)
	assert.Equal(t, StatusDuplicate, outs[0].Status, "the same event again")
	require.Equal(t, StatusRejected, outs[1].Status, "another event under a used id")
	assert.Equal(t, "id", outs[1].Error.Field)
	assert.Contains(t, outs[1].Error.Msg, `"u:2" is already the id of another event in stream `+StreamForCwd("/home/u/reuse")+` (seq 2)`)
	assert.Equal(t, 1, res.Duplicates)
	assert.Equal(t, 1, res.Rejected)

	// Within one call.
	_, outs, err = eng.Ingest(ctx, [][]byte{line("u:3", "third"), line("u:3", "third, edited")})
	require.NoError(t, err)
	assert.Equal(t, StatusAppended, outs[0].Status)
	require.Equal(t, StatusRejected, outs[1].Status)
	assert.Contains(t, outs[1].Error.Msg, "an event still being written")

	// dshmem's own operation keys: a retry with a new time is a duplicate.
	own := func(tm string) []byte {
		return []byte(`{"id":"dshmem:remember:abc","type":"memory/remember","time":"` + tm + `","cwd":"/home/u/reuse","data":{"content":"Use pnpm."}}`)
	}
	_, outs, err = eng.Ingest(ctx, [][]byte{own("2026-08-18T10:00:00Z")})
	require.NoError(t, err)
	require.Equal(t, StatusAppended, outs[0].Status)
	_, outs, err = eng.Ingest(ctx, [][]byte{own("2026-08-18T11:00:00Z")})
	require.NoError(t, err)
	assert.Equal(t, StatusDuplicate, outs[0].Status)

	// Nothing refused reached the log.
	n := 0
	lg := eng.Log()
	for _, s := range lg.Streams() {
		n += int(lg.LastSeq(s))
	}
	assert.Equal(t, 4, n, "the log holds %d events, want u:1, u:2, u:3 and the remember", n)
}
