package sysfs

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strings"
	"time"

	"github.com/ulikunitz/xz"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// ArchiveOptions tune LoadArchive. The zero value is the defaults.
type ArchiveOptions struct {
	// MaxFileSize is the most bytes kept of an attribute, 1..PageSize; 0
	// means PageSize, as MirrorOptions.MaxFileSize: longer ones are cut
	// and reported.
	MaxFileSize int
	// MaxAttrSize is the largest attribute the archive may hold; a bigger
	// one is refused as absurd for a sysfs. 0 means
	// DefaultArchiveMaxAttrSize.
	MaxAttrSize int64
	// MaxSize bounds the archive's uncompressed tar stream, entries
	// outside the tree (proc/ ...) included: past it the load stops with
	// an error. 0 means DefaultArchiveMaxSize.
	MaxSize int64
}

// Defaults of ArchiveOptions. A tar entry takes at least 512 bytes of
// stream, so DefaultArchiveMaxSize admits at most 4 million entries:
// about 1 GiB of tree at the most.
const (
	DefaultArchiveMaxAttrSize = 1 << 20
	DefaultArchiveMaxSize     = 2 << 30
)

func (o ArchiveOptions) withDefaults() ArchiveOptions {
	if o.MaxFileSize <= 0 || o.MaxFileSize > kernfsim.PageSize {
		o.MaxFileSize = kernfsim.PageSize
	}
	if o.MaxAttrSize <= 0 {
		o.MaxAttrSize = DefaultArchiveMaxAttrSize
	}
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultArchiveMaxSize
	}
	return o
}

// ArchiveReport counts what LoadArchive loaded.
type ArchiveReport struct {
	File        string
	Compression string // "none", "gzip", "bzip2" or "xz": what the magic bytes said
	// Root is the archive's directory served as the tree's root: "M/sys"
	// for hwloc-gather-topology's layout, "sys", or "." for a tar of
	// /sys's own entries.
	Root                  string
	Dirs, Attrs, Symlinks int   // nodes added below the root
	Bytes                 int64 // attribute contents kept
	// ImplicitDirs are directories with no entry of their own in the
	// archive (only entries below them): added 0755, owned by root.
	ImplicitDirs int
	// Truncated are attributes longer than MaxFileSize, kept cut.
	Truncated []string
	// Padded counts the attributes of exactly PageSize bytes that end in
	// a zero byte: what GNU tar saves of a live sysfs attribute (it pads
	// the read to the size stat gave, a page). They are kept as they are.
	Padded int
	// Outside counts the entries not below Root (proc/ and the like):
	// checked and read past, not served.
	Outside int
	Elapsed time.Duration
	Options ArchiveOptions // as used, defaults filled in
}

// String sums r up as the mount command prints it.
func (r ArchiveReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "loaded %s (%s, tree at %s) in %v: %d directories, %d attributes (%d bytes of contents), %d symlinks",
		r.File, r.Compression, r.Root, r.Elapsed.Round(time.Millisecond), r.Dirs, r.Attrs, r.Bytes, r.Symlinks)
	if r.Outside > 0 {
		fmt.Fprintf(&b, "\n  %d entries outside %s were not served", r.Outside, r.Root)
	}
	if r.ImplicitDirs > 0 {
		fmt.Fprintf(&b, "\n  %d directories had no entry of their own: added 0755, owned by root", r.ImplicitDirs)
	}
	if len(r.Truncated) > 0 {
		fmt.Fprintf(&b, "\n  %d attributes longer than %d bytes were cut: %s", len(r.Truncated), r.Options.MaxFileSize, examples(r.Truncated))
	}
	if r.Padded > 0 {
		fmt.Fprintf(&b, "\n  %d attributes are %d bytes ending in zeros, as tar saves a live sysfs (it pads each read to a page): served as they are; save with hwloc-gather-topology, or copy with cat before tar", r.Padded, kernfsim.PageSize)
	}
	return b.String()
}

// ArchiveError is an archive LoadArchive refuses: what is wrong with it,
// at which entry, and what to do.
type ArchiveError struct {
	File    string
	Entry   string // the entry as named in the archive; "" for the whole archive
	Problem string
	Fix     string
	Err     error // the decompressor's or tar reader's error, if any
}

func (e *ArchiveError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Entry != "" {
		fmt.Fprintf(&b, ": entry %q", e.Entry)
	}
	b.WriteString(": " + e.Problem)
	if e.Err != nil {
		b.WriteString(" (" + e.Err.Error() + ")")
	}
	if e.Fix != "" {
		b.WriteString("; " + e.Fix)
	}
	return b.String()
}

func (e *ArchiveError) Unwrap() error { return e.Err }

// Fixes named in ArchiveErrors.
const (
	fixRemake  = "make the archive again from the machine's /sys (hwloc-gather-topology, or tar -C /sys -c .)"
	fixCorrupt = "the file is cut short or damaged: check it (tar -tvf, gzip -t, bzip2 -t, xz -t) and copy or make it again"
)

// LoadArchive populates the empty tree t with the sysfs saved in the tar
// archive file: plain, or compressed with gzip, bzip2 or xz (told by its
// magic bytes, not its name). The archive is read once, as a stream;
// nothing is written to disk. Its nodes are the ones MirrorHost makes of
// the unpacked directory: directories, attributes with their modes,
// owners and contents (cut at MaxFileSize), symlinks with their exact
// targets. The tree's root is the archive's sys/ directory (see
// ArchiveReport.Root for the layouts accepted). An archive that could
// not come from a sysfs, or that is damaged, is an *ArchiveError naming
// the entry; TestLoadArchiveRefuses lists each case.
//
// Locking: as MirrorHost, one write-side acquisition per directory.
func LoadArchive(t *kernfsim.Tree, file string, opts ArchiveOptions) (ArchiveReport, error) {
	f, err := os.Open(file)
	if err != nil {
		return ArchiveReport{File: file}, &ArchiveError{File: file, Problem: "cannot open it", Err: unwrapPath(err)}
	}
	defer f.Close()
	return LoadArchiveFrom(t, file, f, opts)
}

// unwrapPath is err without its *fs.PathError, whose path the
// ArchiveError names already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// LoadArchiveFrom is LoadArchive reading the archive from r; name stands
// for it in the report and in errors.
func LoadArchiveFrom(t *kernfsim.Tree, name string, r io.Reader, opts ArchiveOptions) (ArchiveReport, error) {
	start := time.Now()
	rep := ArchiveReport{File: name, Options: opts.withDefaults()}
	if n := t.Nodes(); n != 1 {
		return rep, fmt.Errorf("load %s: the tree must be empty, it has %d nodes", name, n)
	}
	a, err := readArchive(name, r, rep.Options, &rep.Compression)
	if err != nil {
		return rep, err
	}
	if err := a.build(t, &rep); err != nil {
		return rep, err
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// archEntry is one entry of the archive, as kept until the tree is built.
type archEntry struct {
	name   string // as in the archive
	path   string // cleaned: no leading "./", "." for the archive's top
	kind   kernfsim.Kind
	mode   fs.FileMode
	uid    uint32
	gid    uint32
	size   int64  // attributes: the size the archive gives
	data   string // attributes: the first MaxFileSize bytes
	target string // symlinks: the target; hard links: the path linked to
	hard   bool   // a hard link to target
}

// archive is every entry of one archive, by cleaned path.
type archive struct {
	file    string
	opts    ArchiveOptions
	entries map[string]*archEntry
	order   []*archEntry // in archive order, one per path
	scratch []byte       // readData's buffer

	// place's last directory, and its path below the root: tar writes a
	// directory's entries together.
	lastDir    *archDir
	lastParent string
}

func (a *archive) fail(e *archEntry, problem, fix string) error {
	name := ""
	if e != nil {
		name = e.name
	}
	return &ArchiveError{File: a.file, Entry: name, Problem: problem, Fix: fix}
}

// readArchive decompresses r and reads every tar entry, checking each.
func readArchive(file string, r io.Reader, opts ArchiveOptions, compression *string) (*archive, error) {
	a := &archive{file: file, opts: opts, entries: map[string]*archEntry{}}
	br := bufio.NewReaderSize(r, 64<<10)
	dr, c, err := decompress(br)
	*compression = c
	if err != nil {
		return nil, &ArchiveError{File: file, Problem: "cannot read it as " + c, Fix: fixCorrupt, Err: err}
	}
	if dr == nil {
		return nil, a.fail(nil, "compressed with "+c+", which kernfsim does not read", "decompress it, or recompress it with xz, bzip2 or gzip")
	}
	if c, ok := dr.(io.Closer); ok {
		defer c.Close()
	}
	s := &stream{r: dr, max: opts.MaxSize}
	if err := a.readEntries(newTarReader(s), s); err != nil {
		return nil, err
	}
	return a, a.checkEnd(s)
}

// Magic bytes of the compressions told apart.
var (
	magicGzip  = []byte{0x1f, 0x8b}
	magicBzip2 = []byte("BZh")
	magicXz    = []byte{0xfd, '7', 'z', 'X', 'Z', 0}
	magicZstd  = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// decompress tells the compression by its magic bytes and returns the
// uncompressed stream; nil for a compression it does not read. It
// decompresses on goroutines of its own, bzip2 on GOMAXPROCS of them
// (see parBzip2), ahead of its reader; the stream is an io.Closer then,
// to stop them.
func decompress(br *bufio.Reader) (io.Reader, string, error) {
	head, _ := br.Peek(len(magicXz))
	switch {
	case bytes.HasPrefix(head, magicGzip):
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, "gzip", err
		}
		return newReadAhead(z), "gzip", nil
	case bytes.HasPrefix(head, magicBzip2):
		return newBzip2Reader(br, runtime.GOMAXPROCS(0)), "bzip2", nil
	case bytes.HasPrefix(head, magicXz):
		z, err := xz.NewReader(br)
		if err != nil {
			return nil, "xz", err
		}
		return newReadAhead(z), "xz", nil
	case bytes.HasPrefix(head, magicZstd):
		return nil, "zstd", nil
	}
	return br, "none", nil
}

// stream counts the uncompressed bytes read, stops past max, and tracks
// how many zero bytes the stream ended with (a tar ends with two zero
// blocks).
type stream struct {
	r         io.Reader
	n, max    int64
	zeroTail  int64
	exhausted bool // read past max
}

func (s *stream) Read(p []byte) (int, error) {
	if s.n >= s.max {
		s.exhausted = true
		return 0, errTooBig
	}
	k, err := s.r.Read(p[:min(int64(len(p)), s.max-s.n)])
	s.n += int64(k)
	if i := lastNonZero(p[:k]); i < 0 {
		s.zeroTail += int64(k)
	} else {
		s.zeroTail = int64(k - 1 - i)
	}
	return k, err
}

// lastNonZero is the index of p's last non-zero byte, -1 if none.
func lastNonZero(p []byte) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0 {
			return i
		}
	}
	return -1
}

var errTooBig = errors.New("size limit reached")

// readEntries reads every header and the contents kept of attributes.
func (a *archive) readEntries(tr *tarReader, s *stream) error {
	var last string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return a.broken(s, afterEntry(last), err)
		}
		e, err := a.entry(h)
		if err != nil {
			return err
		}
		if e == nil {
			continue
		}
		if e.kind == kernfsim.KindAttr && !e.hard {
			if err := a.readData(tr, e); err != nil {
				return a.broken(s, fmt.Sprintf("cannot be read in entry %q", h.Name), err)
			}
		}
		if err := a.add(e); err != nil {
			return err
		}
		last = h.Name
	}
}

// broken is the error for a stream that failed: problem says where.
func (a *archive) broken(s *stream, problem string, err error) error {
	if s.exhausted {
		return &ArchiveError{File: a.file, Problem: fmt.Sprintf("holds more than %d bytes uncompressed, more than any sysfs", a.opts.MaxSize),
			Fix: "if it is a sysfs, raise the bound (ArchiveOptions.MaxSize)"}
	}
	return &ArchiveError{File: a.file, Problem: problem, Fix: fixCorrupt, Err: err}
}

// afterEntry says where a stream failed after the entry last ("" if
// none).
func afterEntry(last string) string {
	if last == "" {
		return "is not a tar archive, or is damaged at its start"
	}
	return fmt.Sprintf("cannot be read after entry %q", last)
}

// readData keeps the first MaxFileSize bytes of an attribute; the tar
// reader skips the rest.
func (a *archive) readData(tr *tarReader, e *archEntry) error {
	n := min(e.size, int64(a.opts.MaxFileSize))
	if int64(cap(a.scratch)) < n {
		a.scratch = make([]byte, a.opts.MaxFileSize)
	}
	buf := a.scratch[:n]
	if _, err := io.ReadFull(tr, buf); err != nil {
		return err
	}
	e.data = string(buf)
	return nil
}

// checkEnd reads the stream to its end, so that the decompressor checks
// its trailer, and checks that the tar ended as tar ends.
func (a *archive) checkEnd(s *stream) error {
	if _, err := io.Copy(io.Discard, s); err != nil {
		return a.broken(s, afterEntry(a.lastName()), err)
	}
	switch {
	case s.n == 0:
		return a.fail(nil, "is empty", fixRemake)
	case s.zeroTail < 2*512:
		return &ArchiveError{File: a.file, Problem: fmt.Sprintf("ends without tar's end-of-archive blocks after entry %q", a.lastName()), Fix: fixCorrupt}
	}
	return nil
}

func (a *archive) lastName() string {
	if len(a.order) == 0 {
		return ""
	}
	return a.order[len(a.order)-1].name
}

// entry checks a header and makes its entry; nil for headers that are
// not files (global PAX headers).
func (a *archive) entry(h *tar.Header) (*archEntry, error) {
	e := &archEntry{name: h.Name, mode: fs.FileMode(h.Mode) & fs.ModePerm, uid: uint32(h.Uid), gid: uint32(h.Gid), size: h.Size}
	p, err := a.cleanPath(e, h.Name)
	if err != nil {
		return nil, err
	}
	e.path = p
	switch h.Typeflag {
	case tar.TypeDir:
		e.kind = kernfsim.KindDir
	case tar.TypeReg, tar.TypeGNUSparse, '\x00':
		e.kind = kernfsim.KindAttr
	case tar.TypeSymlink:
		e.kind, e.target, e.mode = kernfsim.KindSymlink, h.Linkname, 0o777
	case tar.TypeLink:
		e.kind, e.hard = kernfsim.KindAttr, true
		if e.target, err = a.cleanPath(e, h.Linkname); err != nil {
			return nil, err
		}
	case tar.TypeXGlobalHeader:
		return nil, nil
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return nil, a.fail(e, "is a device file or FIFO, which a sysfs never holds", "remove it from the archive (tar --delete) or make it again from /sys only")
	default:
		return nil, a.fail(e, fmt.Sprintf("has tar type %q, which a sysfs never holds", h.Typeflag), fixRemake)
	}
	return e, nil
}

// cleanPath is name without leading "./" and trailing "/", "." for the
// archive's top; absolute names and ".." are refused.
func (a *archive) cleanPath(e *archEntry, name string) (string, error) {
	if strings.HasPrefix(name, "/") {
		return "", a.fail(e, "has an absolute path", "make the archive with relative names (tar -C / -c sys, or hwloc-gather-topology)")
	}
	for c := range strings.SplitSeq(name, "/") {
		if c == ".." {
			return "", a.fail(e, "has \"..\" in its path, which points out of the archive", "make the archive with plain relative names")
		}
	}
	return path.Clean(name), nil
}

// add records e, refusing a second entry for a path (a directory may be
// given twice; the last one counts).
func (a *archive) add(e *archEntry) error {
	if old := a.entries[e.path]; old != nil {
		if old.kind != kernfsim.KindDir || e.kind != kernfsim.KindDir {
			return a.fail(e, "appears twice in the archive", "keep one copy (tar --delete removes all copies of a name; make the archive again)")
		}
		*old = *e // the entry order and the map hold
		return nil
	}
	if e.hard {
		if err := a.resolveHard(e); err != nil {
			return err
		}
	}
	a.entries[e.path] = e
	a.order = append(a.order, e)
	return nil
}

// resolveHard makes a hard link a copy of the attribute it links to,
// which must come before it, as tar writes them.
func (a *archive) resolveHard(e *archEntry) error {
	to := a.entries[e.target]
	if to == nil || to.kind != kernfsim.KindAttr {
		return a.fail(e, fmt.Sprintf("is a hard link to %q, which is not a regular file before it in the archive", e.target), fixRemake)
	}
	e.data, e.size, e.hard, e.target = to.data, to.size, false, ""
	return nil
}
