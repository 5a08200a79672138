package sysfs

import (
	"bytes"
	"compress/bzip2"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernfsim/kernfsim/internal/testkit"
)

// bzip2With compresses raw with the bzip2 command and its options (-1:
// blocks of 100 kB, so that a test's data makes several).
func bzip2With(t testing.TB, raw []byte, opts ...string) []byte {
	t.Helper()
	tool := testkit.RequireTool(t, "bzip2")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, tool, append([]string{"-c"}, opts...)...)
	cmd.Stdin, cmd.Stdout = bytes.NewReader(raw), &buf
	require.NoError(t, cmd.Run())
	return buf.Bytes()
}

// sysfsLike is n bytes of text with the runs of zeros a tar holds: lines
// of numbers, padded to 512-byte blocks now and then.
func sysfsLike(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	for b.Len() < n {
		fmt.Fprintf(&b, "cpu%d/topology/core_siblings %x\n", rng.IntN(448), rng.Uint64())
		if rng.IntN(8) == 0 {
			b.Write(make([]byte, 512-b.Len()%512))
		}
	}
	return b.Bytes()[:n]
}

// decodeBoth decodes data with compress/bzip2 and with parBzip2 on
// workers goroutines: what each gave, its error, and whether parBzip2
// fell back to sequential decoding.
type decoded struct {
	out []byte
	err string
}

func decodeSeq(data []byte) decoded {
	out, err := io.ReadAll(bzip2.NewReader(bytes.NewReader(data)))
	return decoded{out, fmt.Sprint(err)}
}

func decodePar(t testing.TB, data []byte, workers int) (decoded, bool) {
	t.Helper()
	r := newBzip2Reader(bytes.NewReader(data), workers)
	defer r.Close()
	out, err := io.ReadAll(r)
	z, ok := r.(*parBzip2)
	require.True(t, ok, "got a %T, want the parallel decoder", r)
	return decoded{out, fmt.Sprint(err)}, z.seq != nil
}

// requireSame checks parBzip2 decodes data as compress/bzip2 does, and
// whether it had to fall back.
func requireSame(t *testing.T, data []byte, wantFallBack bool) decoded {
	t.Helper()
	want := decodeSeq(data)
	for _, workers := range []int{2, 5} {
		got, fellBack := decodePar(t, data, workers)
		if got.err != want.err || !bytes.Equal(got.out, want.out) {
			t.Fatalf("workers=%d: got %d bytes and error %s, want %d bytes and error %s (same bytes: %v)",
				workers, len(got.out), got.err, len(want.out), want.err, bytes.Equal(got.out, want.out))
		}
		if fellBack != wantFallBack {
			t.Errorf("workers=%d: fell back to sequential decoding: %v, want %v", workers, fellBack, wantFallBack)
		}
	}
	return want
}

// TestBzip2Parallel: parBzip2 gives what compress/bzip2 gives, byte for
// byte and error for error, for multi-block streams, concatenated
// streams, an empty stream, truncated and damaged files.
func TestBzip2Parallel(t *testing.T) {
	raw := sysfsLike(600<<10, 1)
	multi := bzip2With(t, raw, "-1")
	if n := countBlocks(multi); n < 4 {
		t.Fatalf("the test file has %d blocks, want several", n)
	}
	t.Run("multi-block", func(t *testing.T) {
		got := requireSame(t, multi, false)
		require.Equal(t, raw, got.out)
	})
	t.Run("one-worker", func(t *testing.T) {
		for _, data := range [][]byte{multi, multi[:len(multi)/2]} {
			r := newBzip2Reader(bytes.NewReader(data), 1)
			out, err := io.ReadAll(r)
			require.NoError(t, r.Close())
			want := decodeSeq(data)
			if fmt.Sprint(err) != want.err || !bytes.Equal(out, want.out) {
				t.Errorf("got %d bytes and error %v, want %d bytes and error %s", len(out), err, len(want.out), want.err)
			}
		}
	})
	t.Run("multi-stream", func(t *testing.T) {
		empty := bzip2With(t, nil)
		cat := bytes.Join([][]byte{multi, empty, bzip2With(t, raw[:5000], "-9"), multi}, nil)
		got := requireSame(t, cat, false)
		require.Equal(t, bytes.Join([][]byte{raw, raw[:5000], raw}, nil), got.out)
		requireSame(t, empty, false)
	})
	t.Run("truncated", func(t *testing.T) {
		for _, n := range []int{1, 5, 10, 11, 100, len(multi) / 3, len(multi) - 10, len(multi) - 1} {
			got := requireSame(t, multi[:len(multi)-n], true)
			if got.err == "<nil>" {
				t.Errorf("cut by %d: no error", n)
			}
		}
	})
	t.Run("trailing", func(t *testing.T) {
		for _, tail := range []string{"B", "BZ", "BZh", "BZh0", "xx", "\x00"} {
			got := requireSame(t, append(bytes.Clone(multi), tail...), true)
			if got.err == "<nil>" {
				t.Errorf("with %q after it: no error", tail)
			}
		}
	})
	t.Run("damaged", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(2, 2))
		for range 6 {
			d := bytes.Clone(multi)
			d[4+rng.IntN(len(d)-4)] ^= byte(1 + rng.IntN(255))
			requireSame(t, d, true)
		}
	})
}

// countBlocks counts the block magics a scan of a bzip2 file finds.
func countBlocks(data []byte) int {
	n := 0
	for p := nextMagic(data, 32); p >= 0; p = nextMagic(data, p+48) {
		if bitsAt(data, p, 48) == bzBlockMagic {
			n++
		}
	}
	return n
}

// falseMagicData is text of exactly the bytes whose bitmap in a bzip2
// block header spells magic: ranges 0-2 of 16 byte values each, their
// 16-bit bitmaps making the 48 bits. Every block of its bzip2 file
// holds magic in its header, where the scan takes it for a block's or
// the stream's end. No byte repeats the one before it: bzip2 writes a
// run of four as the four and a byte of run length, another value.
func falseMagicData(magic uint64, n int, seed uint64) []byte {
	var symbols []byte
	for r := range 3 {
		bitmap := magic >> (32 - 16*r) & 0xffff
		for s := range 16 {
			if bitmap&(1<<(15-s)) != 0 {
				symbols = append(symbols, byte(16*r+s))
			}
		}
	}
	rng := rand.New(rand.NewPCG(seed, 3))
	out := make([]byte, n)
	for i := range out {
		out[i] = symbols[rng.IntN(len(symbols))]
		if i > 0 && out[i] == out[i-1] {
			out[i] = symbols[(bytes.IndexByte(symbols, out[i])+1)%len(symbols)] // no runs: bzip2 would add run lengths, other bytes
		}
	}
	return out
}

// TestBzip2ParallelFalseMagic: a magic inside a block, found by the
// scan, makes parBzip2 fall back to sequential decoding, after the
// blocks before it, and still give what compress/bzip2 gives.
func TestBzip2ParallelFalseMagic(t *testing.T) {
	good := bzip2With(t, sysfsLike(300<<10, 4), "-1")
	for _, magic := range []uint64{bzBlockMagic, bzEndMagic} {
		raw := falseMagicData(magic, 250<<10, magic)
		crafted := bzip2With(t, raw, "-1")
		t.Run(fmt.Sprintf("magic=%x", magic), func(t *testing.T) {
			got := requireSame(t, crafted, true)
			require.Equal(t, raw, got.out)
		})
		t.Run(fmt.Sprintf("magic=%x/after-a-stream", magic), func(t *testing.T) {
			got := requireSame(t, append(bytes.Clone(good), crafted...), true)
			require.Equal(t, raw, got.out[len(got.out)-len(raw):])
		})
	}
}

// TestBzip2ParallelHeld: a block that decodes to more than parBzip2
// holds is decoded sequentially, with the same bytes.
func TestBzip2ParallelHeld(t *testing.T) {
	raw := sysfsLike(600<<10, 8)
	data := bzip2With(t, raw, "-9") // one block, decoded in three chunks
	old := bzMaxHeld
	bzMaxHeld = 64 << 10
	t.Cleanup(func() { bzMaxHeld = old })
	got := requireSame(t, data, true)
	require.Equal(t, raw, got.out)
}

// TestBzip2ParallelClose: Close ends the goroutines of a decoder read
// only in part (the test's timeout fails it if they do not end).
func TestBzip2ParallelClose(t *testing.T) {
	data := bzip2With(t, sysfsLike(600<<10, 5), "-1")
	for _, n := range []int{0, 1, 300 << 10} {
		r := newBzip2Reader(bytes.NewReader(data), 2)
		_, err := io.ReadFull(r, make([]byte, n))
		require.NoError(t, err)
		require.NoError(t, r.Close())
	}
}

// FuzzBzip2Parallel: on any input parBzip2 gives what compress/bzip2
// gives, bytes and error, and ends.
func FuzzBzip2Parallel(f *testing.F) {
	f.Add(bzip2With(f, sysfsLike(250<<10, 6), "-1"))
	f.Add(bzip2With(f, falseMagicData(bzEndMagic, 120<<10, 7), "-1"))
	f.Add(bzip2With(f, nil))
	f.Add([]byte("BZh9"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 || string(data[:3]) != "BZh" {
			return // decompress hands parBzip2 only what starts so
		}
		want := decodeSeq(data)
		got, _ := decodePar(t, data, 2)
		if got.err != want.err || !bytes.Equal(got.out, want.out) {
			t.Fatalf("got %d bytes and error %s, want %d bytes and error %s", len(got.out), got.err, len(want.out), want.err)
		}
	})
}
