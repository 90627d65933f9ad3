package observer_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/replay"
	"dshmem/sqlstore/recall"

	"github.com/stretchr/testify/require"
)

const damageSegmentSize = 1500

// damageTemplate builds a root with three workspace streams; the first
// (a) gets 30 batches, so it has sealed segments and an active one. It
// returns the root, the three cwds and their streams.
func damageTemplate(t *testing.T) (root string, cwds, streams []string) {
	t.Helper()
	ctx := context.Background()
	root = filepath.Join(t.TempDir(), "root")
	base := t.TempDir()
	eng, err := observer.Open(ctx, root, observer.Options{Log: events.Options{SegmentSize: damageSegmentSize}})
	require.NoError(t, err)
	for _, name := range []string{"a", "b", "c"} {
		cwd := filepath.Join(base, name)
		require.NoError(t, os.MkdirAll(cwd, 0o755))
		cwds = append(cwds, cwd)
		n := 3
		if name == "a" {
			n = 30
		}
		for i := range n {
			line := fmt.Sprintf(`{"id":"%s:%d","type":"user/message","time":"2026-08-18T10:%02d:00Z","session":"s-%s","cwd":%q,"data":{"text":"workspace %s note %d about the zebrafish parser"}}`, name, i, i, name, cwd, name, i)
			res, outs, err := eng.Ingest(ctx, [][]byte{[]byte(line)})
			require.NoError(t, err)
			require.Equal(t, 1, res.Appended, "%+v", outs)
			if i == 0 {
				streams = append(streams, outs[0].Stream)
			}
		}
	}
	require.NoError(t, eng.Close())
	return root, cwds, streams
}

// segmentBatches reads the batches of a clean segment with the reader:
// the count a salvage must reach, found independently of Salvage.
func segmentBatches(t *testing.T, path string) []events.Batch {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r := events.NewReader(f)
	var out []events.Batch
	for {
		b, err := r.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		b.Events, b.Lines = nil, nil
		out = append(out, b)
	}
}

func copyRoot(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p[len(dir):]] = string(b)
		return err
	}))
	return out
}

// TestCorruptionIsQuarantined is the corruption proof: a byte flipped
// at 40 seeded offsets of a sealed and 40 of the active segment of one
// stream, in a root of three. Each time the engine opens, the damage is
// found (at open for the active segment; by the full walk serve runs at
// start for a sealed one, which open trusts by its seal) and the stream
// quarantined: events for it are refused naming the damage and the
// salvage command, the other streams take events and answer recalls,
// and their files are as they were. Salvage then keeps every batch the
// flip did not hit (counted from the clean copy), reports exactly the
// seqs of the one it hit, and the log verifies, replay --verify passes
// and the stream takes events again.
func TestCorruptionIsQuarantined(t *testing.T) {
	ctx := context.Background()
	template, cwds, streams := damageTemplate(t)
	sdir := filepath.Join(template, observer.LogDir, streams[0])
	ents, err := os.ReadDir(sdir)
	require.NoError(t, err)
	var segs []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".jsonl.zst") {
			segs = append(segs, e.Name())
		}
	}
	require.GreaterOrEqual(t, len(segs), 3, "want sealed segments and an active one")
	var total int
	for _, s := range segs {
		total += len(segmentBatches(t, filepath.Join(sdir, s)))
	}
	rng := rand.New(rand.NewPCG(7, 12))
	var flips, hit, lostSeqs int
	defer func() {
		t.Logf("%d flips in 2 segments of 1 of 3 streams (%d batches): %d hit a batch (%d seqs lost, each reported exactly), %d a stream header or seal (nothing lost)",
			flips, total, hit, lostSeqs, flips-hit)
	}()
	for _, target := range []string{segs[0], segs[len(segs)-1]} {
		clean, err := os.ReadFile(filepath.Join(sdir, target))
		require.NoError(t, err)
		batches := segmentBatches(t, filepath.Join(sdir, target))
		for k := range 40 {
			// Spread over the file: one offset drawn in each 40th of it.
			at := (k*len(clean))/40 + rng.IntN(max(1, len(clean)/40))
			lost := []events.SeqRange{}
			for _, b := range batches {
				if int64(at) >= b.Offset && int64(at) < b.End {
					lost = []events.SeqRange{{First: b.Header.FirstSeq, Last: b.Header.LastSeq()}}
				}
			}
			t.Run(fmt.Sprintf("%s@%d", target[len(target)-14:len(target)-10], at), func(t *testing.T) {
				root := filepath.Join(t.TempDir(), "root")
				copyRoot(t, template, root)
				seg := filepath.Join(root, observer.LogDir, streams[0], target)
				damaged := bytes.Clone(clean)
				damaged[at] ^= 0x10
				require.NoError(t, os.WriteFile(seg, damaged, 0o644))
				others := map[string]map[string]string{}
				for _, s := range streams[1:] {
					others[s] = readTree(t, filepath.Join(root, observer.LogDir, s))
				}

				eng, err := observer.Open(ctx, root, observer.Options{Log: events.Options{SegmentSize: damageSegmentSize}})
				require.NoError(t, err, "open with a damaged stream")
				_, _, err = eng.Log().Verify(ctx) // what serve runs at start
				require.NoError(t, err)
				q := eng.Quarantined()
				require.Len(t, q, 1, "quarantined: %+v", q)
				require.Equal(t, streams[0], q[0].Stream)
				require.Equal(t, seg, q[0].Segment)
				for _, s := range streams[1:] {
					require.Equal(t, others[s], readTree(t, filepath.Join(root, observer.LogDir, s)), "stream %s changed", s)
				}
				for i, cwd := range cwds {
					line := fmt.Sprintf(`{"id":"late-%d","type":"user/message","time":"2026-08-18T11:00:00Z","session":"late-%d","cwd":%q,"data":{"text":"late note"}}`, i, i, cwd)
					res, outs, err := eng.Ingest(ctx, [][]byte{[]byte(line)})
					require.NoError(t, err)
					if i == 0 {
						require.Equal(t, 1, res.Rejected, "%+v", outs)
						require.Contains(t, outs[0].Error.Error(), "quarantined")
						require.Contains(t, outs[0].Error.Error(), "dshmem salvage "+streams[0])
						continue
					}
					require.Equal(t, 1, res.Appended, "ingest into %s beside a quarantined stream: %+v", streams[i], outs)
					got, err := eng.Recall(ctx, recall.Query{Text: "zebrafish parser", Kind: recall.KindEpisodic, Scopes: []string{streams[i]}, Timeout: time.Minute}) // what is found, not how fast
					require.NoError(t, err)
					require.NotEmpty(t, got.Items, "recall in %s", streams[i])
				}
				require.NoError(t, eng.Close())

				rep, err := observer.Salvage(ctx, root, streams[0], observer.SalvageOptions{Log: events.Options{SegmentSize: damageSegmentSize}})
				require.NoError(t, err, "salvage")
				require.Equal(t, lost, rep.Lost, "lost seqs")
				require.Equal(t, total-len(lost), rep.Batches, "whole batches kept")
				require.EqualValues(t, 30, rep.Last)
				moved, err := os.ReadFile(filepath.Join(rep.MovedTo, target))
				require.NoError(t, err)
				require.Equal(t, damaged, moved, "the damaged segment is kept aside, as it was")

				problems, err := events.Verify(filepath.Join(root, observer.LogDir))
				require.NoError(t, err)
				require.Empty(t, problems, "verify after salvage")
				eng, err = observer.Open(ctx, root, observer.Options{Log: events.Options{SegmentSize: damageSegmentSize}})
				require.NoError(t, err)
				require.Empty(t, eng.Quarantined())
				res, outs, err := eng.Ingest(ctx, [][]byte{[]byte(fmt.Sprintf(`{"id":"after","type":"user/message","time":"2026-08-18T12:00:00Z","session":"late-0","cwd":%q,"data":{"text":"after the salvage"}}`, cwds[0]))})
				require.NoError(t, err)
				require.Equal(t, 1, res.Appended, "%+v", outs)
				require.EqualValues(t, 31, outs[0].Seq)
				vr, err := replay.Verify(ctx, eng.Log(), root, eng.Store(), replay.VerifyOptions{})
				require.NoError(t, err)
				require.Empty(t, vr.Differences, "replay --verify after salvage")
				require.Empty(t, vr.Behind)
				require.NoError(t, eng.Close())
				flips++
				if len(lost) > 0 {
					hit++
					lostSeqs += int(lost[0].Last - lost[0].First + 1)
				}
			})
		}
	}
}

// TestOpenWithDamagedStream: before quarantine, one damaged batch header
// in the active segment of one stream made every open of the root fail
// ("stream … is corrupt"). Now the root opens, the stream refuses
// writes, the others take them.
func TestOpenWithDamagedStream(t *testing.T) {
	ctx := context.Background()
	root, cwds, streams := damageTemplate(t)
	sdir := filepath.Join(root, observer.LogDir, streams[1])
	seg := filepath.Join(sdir, events.SegmentName(1))
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	bs := segmentBatches(t, seg)
	b[bs[1].Offset+20] ^= 1 // in the header of the middle batch: open reads every header
	require.NoError(t, os.WriteFile(seg, b, 0o644))
	eng, err := observer.Open(ctx, root, observer.Options{})
	require.NoError(t, err, "open a root with one damaged stream")
	defer eng.Close()
	_, err = eng.Remember(ctx, observer.RememberRequest{Content: "we deploy on fridays", Cwd: cwds[1]})
	require.Error(t, err)
	require.Contains(t, err.Error(), "quarantined")
	_, err = eng.Remember(ctx, observer.RememberRequest{Content: "we deploy on mondays", Cwd: cwds[2]})
	require.NoError(t, err, "remember into another stream")
}
