package sysfs

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"strings"
)

// tarReader reads a tar archive as archive/tar's Reader does, with less
// work for the headers a sysfs archive is made of: a POSIX or GNU header
// of a regular file, directory, symlink or hard link, its numbers in
// octal. It parses those itself, without the fields LoadArchive does not
// use (times, owner names, format). Any other header (PAX, GNU long
// names, base-256 numbers, V7, anything it doubts) it has archive/tar
// read, with the extended headers before the entry, and reads on from
// the entry's data; after a sparse file or a global PAX header, whose
// data archive/tar reads its own way, archive/tar reads the rest. Its
// headers' names, types, modes, owners, sizes and link targets, the data
// and the errors are archive/tar's (FuzzTarReader compares them on any
// input).
type tarReader struct {
	r      io.Reader
	blk    [512]byte
	hdr    tar.Header
	remain int64       // bytes of the current entry's data not read
	pad    int64       // bytes of padding after them
	tr     *tar.Reader // archive/tar, once it has taken over
	err    error       // the error Next gave, given again
}

// tarFastPath is false where GODEBUG asks archive/tar to refuse
// non-local names (tarinsecurepath=0): archive/tar then reads them all.
var tarFastPath = !strings.Contains(os.Getenv("GODEBUG"), "tarinsecurepath=0")

func newTarReader(r io.Reader) *tarReader {
	t := &tarReader{r: r}
	if !tarFastPath {
		t.tr = tar.NewReader(r)
	}
	return t
}

// Next is tar.Reader.Next. The header it returns is valid until the next
// call.
func (t *tarReader) Next() (*tar.Header, error) {
	switch {
	case t.tr != nil:
		return t.tr.Next()
	case t.err != nil:
		return nil, t.err
	}
	h, err := t.next()
	t.err = err
	return h, err
}

func (t *tarReader) next() (*tar.Header, error) {
	if err := discard(t.r, t.remain); err != nil {
		return nil, err
	}
	t.remain = 0
	if err := readPad(t.r, t.blk[:t.pad]); err != nil {
		return nil, err
	}
	t.pad = 0
	if _, err := io.ReadFull(t.r, t.blk[:]); err != nil {
		return nil, err // io.EOF is the archive's end, without its end blocks
	}
	if t.blk == [512]byte{} {
		if _, err := io.ReadFull(t.r, t.blk[:]); err != nil {
			return nil, err
		}
		if t.blk == [512]byte{} {
			return nil, io.EOF
		}
		return nil, tar.ErrHeader
	}
	if !t.parse() {
		return t.delegate()
	}
	return &t.hdr, nil
}

// delegate has archive/tar read the entry whose first header is t.blk.
// Its data is next in the stream, read as parse's entries are, unless
// archive/tar reads it its own way: then archive/tar reads the rest.
func (t *tarReader) delegate() (*tar.Header, error) {
	tr := tar.NewReader(io.MultiReader(bytes.NewReader(bytes.Clone(t.blk[:])), t.r))
	h, err := tr.Next()
	if err != nil || !resumable(h) {
		t.tr = tr
		return h, err
	}
	size := h.Size
	switch h.Typeflag {
	case tar.TypeLink, tar.TypeSymlink, tar.TypeChar, tar.TypeBlock, tar.TypeDir, tar.TypeFifo:
		size = 0 // archive/tar's header-only types
	}
	t.remain, t.pad = size, -size&511
	return h, nil
}

// resumable is whether h's data is plain, its size bytes then padding:
// not a sparse file's, nor a global PAX header's (whose padding
// archive/tar skips at its next header, without saying its size).
func resumable(h *tar.Header) bool {
	if h.Typeflag == tar.TypeGNUSparse || h.Typeflag == tar.TypeXGlobalHeader {
		return false
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return false
		}
	}
	return true
}

// discard reads n bytes past, as archive/tar skips what was not read of
// an entry.
func discard(r io.Reader, n int64) error {
	if n == 0 {
		return nil // as io.CopyN's, without its allocation
	}
	k, err := io.CopyN(io.Discard, r, n)
	if err == io.EOF && k < n {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// readPad reads an entry's padding, as archive/tar does: an end inside
// it is io.EOF.
func readPad(r io.Reader, b []byte) error {
	n, err := 0, error(nil)
	for len(b) > n && err == nil {
		var k int
		k, err = r.Read(b[n:])
		n += k
	}
	if len(b) == n && err == io.EOF {
		err = nil
	}
	return err
}

// Offsets of a header's fields (POSIX.1-1988 ustar; GNU has its access
// and change times where ustar has its prefix).
const (
	tarType     = 156
	tarMagic    = 257 // 6 bytes, then the 2-byte version
	tarPrefix   = 345 // ustar: 155 bytes
	tarGNUTimes = 345 // GNU: access and change time, 12 bytes each
	tarTrailer  = 508 // star: "tar\x00"
)

// parse fills t.hdr from t.blk if it is a header of the fast path.
func (t *tarReader) parse() bool {
	b := &t.blk
	typ := b[tarType]
	if typ != tar.TypeReg && typ != tar.TypeDir && typ != tar.TypeSymlink && typ != tar.TypeLink {
		return false
	}
	ustar := string(b[tarMagic:tarMagic+6]) == "ustar\x00" && string(b[tarTrailer:]) != "tar\x00"
	gnu := string(b[tarMagic:tarMagic+8]) == "ustar  \x00" && b[tarGNUTimes] == 0 && b[tarGNUTimes+12] == 0
	sum, ok := octalField(b[148:156])
	if !ok || !(ustar || gnu) || sum != checksum(b) {
		return false
	}
	var n [7]int64 // mode, uid, gid, size, mtime; devmajor, devminor
	for i, f := range [7][2]int{{100, 8}, {108, 8}, {116, 8}, {124, 12}, {136, 12}, {329, 8}, {337, 8}} {
		if n[i], ok = octalField(b[f[0] : f[0]+f[1]]); !ok {
			return false
		}
	}
	name := string(cString(b[:100]))
	if p := cString(b[tarPrefix : tarPrefix+155]); ustar && len(p) > 0 {
		name = string(p) + "/" + name
	}
	size := n[3]
	if typ != tar.TypeReg {
		size = 0 // no data follows, whatever the size says
	}
	t.hdr = tar.Header{Typeflag: typ, Name: name, Linkname: string(cString(b[157:257])), Mode: n[0], Uid: int(n[1]), Gid: int(n[2]), Size: n[3]}
	t.remain, t.pad = size, -size&511
	return true
}

// checksum is the unsigned sum of b's bytes, its checksum field counted
// as spaces. It adds eight bytes at a time, in four 16-bit lanes (at
// most 64 * 510 each: no carry between them).
func checksum(b *[512]byte) int64 {
	const lanes = 0x00ff00ff00ff00ff
	var acc uint64
	for i := 0; i < len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		acc += w&lanes + w>>8&lanes
	}
	s := int64(acc&0xffff + acc>>16&0xffff + acc>>32&0xffff + acc>>48)
	for _, c := range b[148:156] {
		s += ' ' - int64(c)
	}
	return s
}

// cString is b up to its first NUL.
func cString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// octalField parses a numeric field as archive/tar does: spaces and
// NULs around it, octal digits up to a NUL; false for what archive/tar
// reads otherwise (base-256) or refuses.
func octalField(b []byte) (int64, bool) {
	if len(b) > 0 && b[0]&0x80 != 0 {
		return 0, false
	}
	b = bytes.Trim(b, " \x00")
	var x int64
	for _, c := range cString(b) {
		if c < '0' || c > '7' {
			return 0, false
		}
		x = x<<3 | int64(c-'0')
	}
	return x, true
}

// Read is tar.Reader.Read: the current entry's data.
func (t *tarReader) Read(p []byte) (int, error) {
	if t.tr != nil {
		return t.tr.Read(p)
	}
	if t.err != nil {
		return 0, t.err
	}
	p = p[:min(int64(len(p)), t.remain)]
	var n int
	var err error
	if len(p) > 0 {
		n, err = t.r.Read(p)
		t.remain -= int64(n)
	}
	switch {
	case err == io.EOF && t.remain > 0:
		err = io.ErrUnexpectedEOF
	case err == nil && t.remain == 0:
		err = io.EOF
	}
	if err != nil && err != io.EOF {
		t.err = err
	}
	return n, err
}
