package sysfs

import (
	"bytes"
	"compress/bzip2"
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"sync"
)

// A bzip2 file is one or more streams, each "BZh" and a level digit,
// then blocks, each starting with the 48-bit block magic and the block's
// CRC at any bit position, then the 48-bit end-of-stream magic, the
// stream's combined CRC and padding to a byte. Blocks are independent,
// so they can be decoded in parallel (as pbzip2 and lbzip2 do).
const (
	bzBlockMagic = 0x314159265359
	bzEndMagic   = 0x177245385090
	bzMagicMask  = 1<<48 - 1
)

// bzMaxParallel is the most compressed bytes parBzip2 holds: a longer
// file is decoded sequentially (a sysfs archive compresses to far less).
// bzMaxHeld is the most output of a block it holds until the block's
// CRC is checked: a block that decodes to more (a tar block of a sysfs
// decodes to about 5 MB) is decoded sequentially, as after a false
// magic. bzMaxWorkers bounds its goroutines, and with them its memory:
// each holds a decoder (its size: docs/performance.md), and at most workers+1
// blocks' output is held (those sent to the reader, and the one it
// reads), each at most bzMaxHeld.
const (
	bzMaxParallel = 64 << 20
	bzMaxWorkers  = 8
)

var bzMaxHeld = 16 << 20 // a variable for TestBzip2ParallelHeld

// parBzip2 decodes a bzip2 file with compress/bzip2 on several
// goroutines, one block at a time each: a scan finds the blocks' starts,
// and each block is decoded as a stream of its own ("BZh", the block
// moved to a byte boundary, the end-of-stream magic and, for one block,
// the block's CRC as the combined CRC). A block's output is given once
// compress/bzip2 has checked the block's CRC, in order, a few blocks
// ahead at most.
//
// Its output and its errors are compress/bzip2's on the whole file, byte
// for byte (TestBzip2Parallel and FuzzBzip2Parallel): compress/bzip2
// checks each block's CRC, and the scan checks each stream's structure
// and combined CRC. A block magic can also appear by chance inside a
// block's compressed bits; the block before it then fails to decode,
// and so does any other damage: from there on, parBzip2 decodes the
// file sequentially with compress/bzip2, past the bytes already given
// (TestBzip2ParallelFalseMagic). A block that decodes at all, its CRC
// checked, ends where the next magic starts (had it read past, into
// the end-of-stream magic put after it, too few bits would be left for
// that magic and the CRC): the blocks given before are the file's own.
// A block is given only once checked, since a cut one may decode to
// other bytes before its CRC fails.
type parBzip2 struct {
	data  []byte // the whole compressed file
	order chan *heldBlock
	done  chan struct{}
	wg    sync.WaitGroup

	chunkCursor            // in the block being read
	cur         *heldBlock // the block being read; nil between blocks
	given       int64      // bytes given so far
	seq         io.Reader  // the sequential decoder, once fallen back (nil before)
	err         error      // the error once given, given again
	closeOnce   sync.Once
}

// newBzip2Reader decodes the bzip2 file r on workers goroutines (at most
// bzMaxWorkers); with one worker, or a file over bzMaxParallel bytes, it
// is compress/bzip2's reader with one goroutine reading ahead. Close
// stops the goroutines.
func newBzip2Reader(r io.Reader, workers int) io.ReadCloser {
	if workers < 2 {
		return newReadAhead(bzip2.NewReader(r))
	}
	workers = min(workers, bzMaxWorkers)
	var buf bytes.Buffer
	_, err := buf.ReadFrom(io.LimitReader(r, bzMaxParallel+1))
	if err != nil || buf.Len() > bzMaxParallel {
		rest := io.MultiReader(bytes.NewReader(buf.Bytes()), errorAfter(r, err))
		return newReadAhead(bzip2.NewReader(rest))
	}
	z := &parBzip2{data: buf.Bytes(), order: make(chan *heldBlock, workers), done: make(chan struct{}), chunkCursor: chunkCursor{pool: newChunkPool()}}
	work := make(chan bzBlock)
	z.wg.Add(1 + workers)
	go z.scan(work)
	for range workers {
		go z.decode(work)
	}
	return z
}

// errorAfter is r, or a reader of err if reading r failed.
func errorAfter(r io.Reader, err error) io.Reader {
	if err != nil {
		return errReader{err}
	}
	return r
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// bzBlock is one block of the file to decode, at bits [from, to).
type bzBlock struct {
	level    byte
	from, to int64
	crc      uint32
	out      *heldBlock
}

// heldBlock is a block's output, whole, once decoded.
type heldBlock struct {
	ready  chan struct{} // closed once decoded, or failed
	chunks [][]byte      // its output, if err is nil
	err    error
}

func newHeldBlock() *heldBlock { return &heldBlock{ready: make(chan struct{})} }

// errBzHeld marks a block whose output is over bzMaxHeld.
var errBzHeld = errors.New("bzip2: a block decodes to more than parBzip2 holds")

// errBzFallback marks where the scan found the file is not as it
// expected: the sequential decoder takes over there.
var errBzFallback = errors.New("bzip2: decoded sequentially from here")

// scan finds each stream's blocks, sends them in order to the reader
// and to the decoders, and ends with a stream failing with
// errBzFallback if the file is not what it expects.
func (z *parBzip2) scan(work chan<- bzBlock) {
	defer z.wg.Done()
	defer close(work)
	defer close(z.order)
	for pos := int64(0); pos < int64(len(z.data)); {
		next, ok := z.scanStream(pos, work)
		if !ok {
			h := &heldBlock{ready: make(chan struct{}), err: errBzFallback}
			close(h.ready)
			sendUnlessDone(z.order, h, z.done)
			return
		}
		pos = next
	}
}

// scanStream sends the blocks of the stream at byte pos and returns
// where the next starts; false if it is not a whole, well-formed stream,
// or if the reader stopped.
func (z *parBzip2) scanStream(pos int64, work chan<- bzBlock) (int64, bool) {
	d := z.data
	if int64(len(d))-pos < 4 || string(d[pos:pos+3]) != "BZh" || d[pos+3] < '1' || d[pos+3] > '9' {
		return 0, false
	}
	level, b, combined := d[pos+3], (pos+4)*8, uint32(0)
	for bitsAt(d, b, 48) == bzBlockMagic {
		next := nextMagic(d, b+48)
		if next < 0 {
			return 0, false
		}
		blk := bzBlock{level: level, from: b, to: next, crc: uint32(bitsAt(d, b+48, 32)), out: newHeldBlock()}
		combined = bits.RotateLeft32(combined, 1) ^ blk.crc
		if !sendUnlessDone(z.order, blk.out, z.done) || !sendUnlessDone(work, blk, z.done) {
			return 0, false
		}
		b = next
	}
	if bitsAt(d, b, 48) != bzEndMagic || b+80 > int64(len(d))*8 || uint32(bitsAt(d, b+48, 32)) != combined {
		return 0, false
	}
	return (b + 80 + 7) / 8, true
}

// sendUnlessDone sends v on ch, unless done is closed first (false).
func sendUnlessDone[T any](ch chan<- T, v T, done <-chan struct{}) bool {
	select {
	case ch <- v:
		return true
	case <-done:
		return false
	}
}

// decode decodes blocks until there are no more.
func (z *parBzip2) decode(work <-chan bzBlock) {
	defer z.wg.Done()
	for b := range work {
		z.decodeBlock(b)
	}
}

// decodeBlock decodes b into b.out, whole, or sets its error.
func (z *parBzip2) decodeBlock(b bzBlock) {
	h := b.out
	defer close(h.ready)
	r := bzip2.NewReader(bytes.NewReader(oneBlockStream(z.data, b)))
	for held := 0; ; {
		select {
		case <-z.done:
			h.err = errBzFallback
			return
		default:
		}
		buf := z.pool.get()
		n, err := fill(r, buf)
		h.chunks = append(h.chunks, buf[:n])
		if held += n; held > bzMaxHeld && err == nil {
			err = errBzHeld
		}
		switch {
		case err == io.EOF:
			return
		case err != nil:
			h.err = err
			return
		}
	}
}

// oneBlockStream is block b as a bzip2 stream of its own.
func oneBlockStream(d []byte, b bzBlock) []byte {
	n := b.to - b.from
	w := bitWriter{buf: make([]byte, 0, 4+(n+80)/8+1)}
	w.buf = append(w.buf, 'B', 'Z', 'h', b.level)
	for pos := b.from; pos < b.to; pos += 32 {
		k := min(32, b.to-pos)
		w.write(bitsAt(d, pos, uint(k)), uint(k))
	}
	w.write(bzEndMagic, 48)
	w.write(uint64(bits.RotateLeft32(0, 1)^b.crc), 32)
	return w.flush()
}

// bitWriter appends bits to buf, most significant first.
type bitWriter struct {
	buf []byte
	acc uint64 // the bits not yet in buf, in its low n bits
	n   uint
}

// write appends the low k bits of v, k <= 48.
func (w *bitWriter) write(v uint64, k uint) {
	w.acc = w.acc<<k | v&(1<<k-1)
	for w.n += k; w.n >= 8; w.n -= 8 {
		w.buf = append(w.buf, byte(w.acc>>(w.n-8)))
	}
}

// flush pads the last byte with zero bits.
func (w *bitWriter) flush() []byte {
	if w.n > 0 {
		w.write(0, 8-w.n)
	}
	return w.buf
}

// load64 is the 8 bytes of d at i, big-endian, zeros past its end.
func load64(d []byte, i int64) uint64 {
	if i+8 <= int64(len(d)) {
		return binary.BigEndian.Uint64(d[i:])
	}
	var b [8]byte
	if i < int64(len(d)) {
		copy(b[:], d[i:])
	}
	return binary.BigEndian.Uint64(b[:])
}

// bitsAt is the k bits of d at bit pos, k <= 57; zeros past its end.
func bitsAt(d []byte, pos int64, k uint) uint64 {
	return load64(d, pos/8) << (pos % 8) >> (64 - k)
}

// bzFirst and bzSecond say, for each byte value, where one of the magics
// could start if it is the byte after the one it starts in, and the one
// after that: bit 2s+m for magic m at bit s of its first byte.
var bzFirst, bzSecond = magicTables()

var bzMagics = [2]uint64{bzBlockMagic, bzEndMagic}

func magicTables() (first, second [256]uint16) {
	for m, magic := range bzMagics {
		for s := range 8 {
			first[magic>>(32+s)&0xff] |= 1 << (2*s + m)
			second[magic>>(24+s)&0xff] |= 1 << (2*s + m)
		}
	}
	return first, second
}

// nextMagic is the first bit at or after from where either magic starts
// in d; -1 if none.
func nextMagic(d []byte, from int64) int64 {
	for i := from / 8; i+2 < int64(len(d)); i++ {
		for m := bzFirst[d[i+1]] & bzSecond[d[i+2]]; m != 0; m &= m - 1 {
			bit := bits.TrailingZeros16(m)
			pos := i*8 + int64(bit/2)
			if pos >= from && pos+48 <= int64(len(d))*8 && bitsAt(d, pos, 48) == bzMagics[bit%2] {
				return pos
			}
		}
	}
	return -1
}

// Read gives the decoded blocks in order.
func (z *parBzip2) Read(p []byte) (int, error) {
	for len(z.chunk) == 0 {
		switch {
		case z.err != nil:
			return 0, z.err
		case z.seq != nil:
			return z.seq.Read(p)
		}
		z.err = z.next()
	}
	n := z.copyOut(p)
	z.given += int64(n)
	return n, nil
}

// next makes the next chunk current; io.EOF after the last.
func (z *parBzip2) next() error {
	z.recycle()
	if z.cur == nil {
		h, ok := <-z.order
		if !ok {
			return io.EOF
		}
		<-h.ready
		if h.err != nil {
			return z.fallBack()
		}
		z.cur = h
	}
	if len(z.cur.chunks) == 0 {
		z.cur = nil
		return nil
	}
	c := z.cur.chunks[0]
	z.cur.chunks = z.cur.chunks[1:]
	z.take(c)
	return nil
}

// fallBack decodes the file sequentially from the start, past the bytes
// already given.
func (z *parBzip2) fallBack() error {
	z.stop()
	z.seq = bzip2.NewReader(bytes.NewReader(z.data))
	if _, err := io.CopyN(io.Discard, z.seq, z.given); err != nil {
		return err // cannot be: the blocks given are the file's own
	}
	return nil
}

// stop ends the goroutines and waits for them.
func (z *parBzip2) stop() {
	z.closeOnce.Do(func() { close(z.done) })
	z.wg.Wait()
}

// Close stops the decoding goroutines.
func (z *parBzip2) Close() error {
	z.stop()
	return nil
}
