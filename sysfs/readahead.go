package sysfs

import (
	"io"
	"sync"
)

// Decompression runs on goroutines of its own while the tar reader
// parses what they gave, so that loading takes about the longer of the
// two, not their sum. What they give goes through chunkStreams: chunks
// of a decoded stream in order, a bounded number ahead, then its error.

const (
	chunkSize  = 256 << 10 // bytes a chunk holds
	chunksAway = 32        // chunks a stream may have decoded ahead of its reader
)

// chunkStream is one decoded stream: its chunks on out, then out closed
// with err set (nil at the stream's end, else what stopped it).
type chunkStream struct {
	out chan []byte
	err error // written before out is closed
}

func newChunkStream() *chunkStream {
	return &chunkStream{out: make(chan []byte, chunksAway)}
}

// produce reads r into chunks until its end or error, or until done is
// closed.
func (s *chunkStream) produce(r io.Reader, pool *chunkPool, done <-chan struct{}) {
	defer close(s.out)
	for {
		buf := pool.get()
		n, err := fill(r, buf)
		if n > 0 {
			select {
			case s.out <- buf[:n]:
			case <-done:
				return
			}
		} else {
			pool.put(buf)
		}
		if err != nil {
			if err != io.EOF {
				s.err = err
			}
			return
		}
	}
}

// fill reads r until buf is full or r fails; io.EOF at r's end.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		k, err := r.Read(buf[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// chunkPool recycles chunks between a stream's goroutine and its reader.
type chunkPool struct{ p sync.Pool }

func newChunkPool() *chunkPool {
	return &chunkPool{p: sync.Pool{New: func() any { return new([chunkSize]byte) }}}
}

func (p *chunkPool) get() []byte  { return p.p.Get().(*[chunkSize]byte)[:] }
func (p *chunkPool) put(b []byte) { p.p.Put((*[chunkSize]byte)(b[:chunkSize])) }

// chunkCursor is a reader's place in pooled chunks: the chunk it reads
// and what is left of it.
type chunkCursor struct {
	pool  *chunkPool
	buf   []byte // the chunk being read, to recycle
	chunk []byte // what is left of it
}

// take makes c, a chunk of the pool, the one being read, recycling the
// one before.
func (k *chunkCursor) take(c []byte) {
	k.recycle()
	k.buf, k.chunk = c, c
}

// recycle gives the chunk being read back to the pool.
func (k *chunkCursor) recycle() {
	if k.buf != nil {
		k.pool.put(k.buf)
		k.buf, k.chunk = nil, nil
	}
}

// copyOut copies what is left of the chunk to p, as far as it goes.
func (k *chunkCursor) copyOut(p []byte) int {
	n := copy(p, k.chunk)
	k.chunk = k.chunk[n:]
	return n
}

// readAhead reads a stream on a goroutine of its own, a few chunks ahead
// of its reader.
type readAhead struct {
	chunkCursor
	s    *chunkStream
	done chan struct{}
	err  error
	once sync.Once
}

func newReadAhead(r io.Reader) *readAhead {
	a := &readAhead{chunkCursor: chunkCursor{pool: newChunkPool()}, s: newChunkStream(), done: make(chan struct{})}
	go a.s.produce(r, a.pool, a.done)
	return a
}

// Read gives what the stream gave, then its error (io.EOF at its end).
func (a *readAhead) Read(p []byte) (int, error) {
	for len(a.chunk) == 0 {
		if a.err != nil {
			return 0, a.err
		}
		a.recycle()
		c, ok := <-a.s.out
		switch {
		case ok:
			a.take(c)
		case a.s.err != nil:
			a.err = a.s.err
		default:
			a.err = io.EOF
		}
	}
	return a.copyOut(p), nil
}

// Close stops the goroutine: at once if it waits for its reader, else
// once its read returns (it may wait on r, which the caller owns, so
// Close does not wait for it).
func (a *readAhead) Close() error {
	a.once.Do(func() { close(a.done) })
	return nil
}
