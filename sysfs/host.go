package sysfs

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// MirrorOptions tune MirrorHost. The zero value is the defaults.
type MirrorOptions struct {
	// MaxFileSize is the most bytes kept of an attribute, 1..PageSize; 0
	// means PageSize, sysfs's own limit for text attributes (longer binary
	// attributes, such as ACPI tables, are cut and counted).
	MaxFileSize int
	// ReadTimeout is how long one attribute's read may take; past it the
	// read is abandoned and the attribute fails with ETIMEDOUT. 0 means
	// DefaultMirrorReadTimeout.
	ReadTimeout time.Duration
	// Readers is how many attributes are read at once; 0 means
	// DefaultMirrorReaders.
	Readers int
	// NoRead are attributes never read, because reading them changes the
	// host or may hang it: each pattern (path.Match syntax) is matched
	// against as many trailing components of the path as it has. They are
	// added unread and fail EIO. nil means DefaultMirrorNoRead; an empty,
	// non-nil slice reads everything.
	NoRead []string
}

// DefaultMirrorNoRead are the sysfs attributes whose read has side
// effects or may hang on faulty hardware.
var DefaultMirrorNoRead = []string{
	"zram-control/hot_add", // a read creates a zram device and returns its number
	"vpd",                  // PCI Vital Product Data: a slow device transaction, hangs on some hardware
	"w1_slave",             // a 1-Wire read starts a conversion on the bus (~750 ms)
}

// Defaults of MirrorOptions.
const (
	DefaultMirrorReadTimeout = time.Second
	DefaultMirrorReaders     = 8
)

func (o MirrorOptions) withDefaults() MirrorOptions {
	if o.MaxFileSize <= 0 || o.MaxFileSize > kernfsim.PageSize {
		o.MaxFileSize = kernfsim.PageSize
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultMirrorReadTimeout
	}
	if o.Readers <= 0 {
		o.Readers = DefaultMirrorReaders
	}
	if o.NoRead == nil {
		o.NoRead = DefaultMirrorNoRead
	}
	return o
}

// MirrorReport counts what MirrorHost loaded and what it left out, with
// the reason for each thing left out.
type MirrorReport struct {
	Dir                   string
	Dirs, Attrs, Symlinks int   // nodes added below the root
	Bytes                 int64 // attribute contents kept
	// Truncated are attributes longer than MaxFileSize, kept cut.
	Truncated []string
	// NotRead are attributes without a read bit, added without reading
	// them: opening one for reading fails EACCES, as on the host.
	NotRead int
	// NoRead are the attributes matching MirrorOptions.NoRead, added
	// unread: reading one fails EIO.
	NoRead []string
	// ReadErrors counts the attributes whose read failed on the host, by
	// errno: they keep their mode and fail with the same errno.
	ReadErrors map[syscall.Errno]int
	// TimedOut are attributes whose read took longer than ReadTimeout
	// (abandoned, never retried): they fail with ETIMEDOUT.
	TimedOut []string
	// Skipped are entries not mirrored, or directories mirrored without
	// their contents, each with the reason.
	Skipped []MirrorSkip
	// Changed are entries found to be another file (or none) when opened
	// than the one listed: something was swapped in between. Nothing is
	// read from what was swapped in: an attribute is added failing EIO, a
	// directory is added empty, a symlink is left out.
	Changed []string
	Elapsed time.Duration
	Options MirrorOptions // as used, defaults filled in
}

// MirrorSkip is one entry MirrorHost left out, or a directory it did not
// descend into.
type MirrorSkip struct {
	Path   string // below Dir
	Reason string
}

// Reasons in MirrorSkip.
const (
	SkipMountPoint  = "mount point of another filesystem, added empty"
	SkipUnreadable  = "directory unreadable, added empty"
	SkipVanished    = "vanished while loading"
	SkipFileType    = "not a directory, regular file or symlink"
	SkipInvalidName = "name kernfsim cannot hold"
	SkipBadSymlink  = "symlink unreadable"
)

// MirrorHost populates the empty tree t with a snapshot of the sysfs (or
// any directory tree) at dir: directories, attribute files with their
// modes, owners and contents, and symlinks with their exact targets. It
// stays on dir's filesystem. Attributes are read once, by opts.Readers
// goroutines, each read capped at opts.MaxFileSize bytes and abandoned
// after opts.ReadTimeout, so a blocking attribute cannot hang the load.
// A read that failed makes an attribute that fails with the same errno; a
// writable attribute keeps what is written to it (a Value). The root takes
// dir's mode and owner. The report counts everything added and lists
// everything left out.
//
// Whoever can write dir cannot make the mirror read anything else, nor
// hang it: every entry is opened from its directory's fd, following no
// symlink and crossing no mount, and checked against its listing before
// it is read; a FIFO, socket or device node is never read (hostopen.go;
// TestMirrorHostSwapRace).
//
// Locking: host files are read without any tree lock; the tree's write
// side is taken once per directory (AddBatch) and once for the root's
// attributes, so a 100,000-entry directory costs one acquisition.
func MirrorHost(t *kernfsim.Tree, dir string, opts MirrorOptions) (MirrorReport, error) {
	start := time.Now()
	rep := MirrorReport{Dir: dir, ReadErrors: map[syscall.Errno]int{}}
	if n := t.Nodes(); n != 1 {
		return rep, fmt.Errorf("mirror %s: the tree must be empty, it has %d nodes", dir, n)
	}
	root, st, err := openRoot(dir)
	if err != nil {
		return rep, err
	}
	rep.Options = opts.withDefaults()
	m := newMirror(t, dir, root, st, rep.Options, &rep)
	dirs := m.scan()
	unix.Close(root)
	if err := m.build(dirs, st); err != nil {
		return rep, err
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// openRoot opens dir (following a symlink there: the caller named it)
// for openBeneath, and stats it.
func openRoot(dir string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		if err = unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		return -1, st, &fs.PathError{Op: "mirror", Path: dir, Err: err}
	}
	return fd, st, nil
}

// mirror is one MirrorHost load: a scanner that walks dir on the calling
// goroutine and readers that read attributes meanwhile.
type mirror struct {
	t      *kernfsim.Tree
	dir    string
	root   int    // dir, opened O_PATH; every directory is opened below it
	rootID fileID // what root is
	dev    uint64 // dir's filesystem; nothing on another one is entered
	opts   MirrorOptions
	rep    *MirrorReport // written by the scanner; readers report through their jobs
	attrs  map[attrKey]*kernfsim.Attr
	jobs   chan []*hostEntry // a directory's attributes to read, up to jobSize at a time
	wg     sync.WaitGroup    // the readers not given up on
	start  time.Time         // the clock readSlot.since counts from
	// sysfs is whether dir is on sysfs, where nobody can rename, link
	// or make a FIFO or device node: there a listed attribute is opened
	// as it is, with no identity check, and a symlink read by name.
	sysfs    bool
	readFile func(f *attrFile, max int) hostRead // hostReadFile when the load began
}

type attrKey struct {
	mode     fs.FileMode
	uid, gid uint32
}

// hostDir is one scanned directory.
type hostDir struct {
	rel     string         // below the mirrored dir; "" for the root
	id      fileID         // what its parent's listing said it is
	node    *kernfsim.Node // set by build before its entries are added
	entries []*hostEntry
	notes   dirNotes // what its scan reports, merged in walk order
	// arena and files hold its entries, so that scanning a directory
	// allocates them a few at a time, not one by one.
	arena []hostEntry
	files []attrFile
}

// newEntry is a new entry of d named name.
func (d *hostDir) newEntry(name string) *hostEntry {
	if len(d.arena) == cap(d.arena) {
		d.arena = make([]hostEntry, 0, min(max(2*cap(d.arena), 8), 256))
	}
	d.arena = append(d.arena, hostEntry{name: name})
	return &d.arena[len(d.arena)-1]
}

// newFile is a new attrFile of d.
func (d *hostDir) newFile() *attrFile {
	if len(d.files) == cap(d.files) {
		d.files = make([]attrFile, 0, min(max(2*cap(d.files), 8), 256))
	}
	d.files = d.files[:len(d.files)+1]
	return &d.files[len(d.files)-1]
}

// dirNotes is what scanning one directory adds to the report; directories
// are scanned in parallel, and their notes merged in the order walked.
type dirNotes struct {
	skipped         []MirrorSkip
	changed, noRead []string
}

func (n *dirNotes) skip(rel, reason string) {
	n.skipped = append(n.skipped, MirrorSkip{Path: rel, Reason: reason})
}

// merge adds n to the report.
func (m *mirror) merge(n *dirNotes) {
	m.rep.Skipped = append(m.rep.Skipped, n.skipped...)
	m.rep.Changed = append(m.rep.Changed, n.changed...)
	m.rep.NoRead = append(m.rep.NoRead, n.noRead...)
}

// hostEntry is one scanned entry. For an attribute with a file, one
// reader fills in spec.Source, truncated, errno, timedOut and changed;
// the scanner reads them only after every reader is done (wg.Wait).
type hostEntry struct {
	name      string
	spec      kernfsim.NodeSpec // its Attr is set by build, from key
	key       attrKey
	writable  bool
	sub       *hostDir  // a directory to descend into
	file      *attrFile // an attribute to read
	truncated bool
	errno     syscall.Errno
	timedOut  bool
	changed   bool
	notRead   bool // no read bit: added unread (scanAttr, or its reader for an attrFile.stat)
	vanished  bool // gone before its reader could stat it (attrFile.stat)
}

// attrFile is an attribute to read: its name in its open directory, and
// what the listing said it is. It holds a reference on dir, which the
// read releases.
type attrFile struct {
	dir    *dirFD
	name   string
	parent string // its directory, below the mirrored dir
	id     fileID
	sysfs  bool // on sysfs: opened as it is (mirror.sysfs)
	// stat is whether the reader stats it: on sysfs a regular file the
	// listing named is opened first and its mode taken from the open fd
	// (an fstat, cheaper than the path walk of an fstatat); id is then
	// unset.
	stat bool
}

// rel is f's path below the mirrored dir.
func (f *attrFile) rel() string { return joinSynthPath(f.parent, f.name) }

func newMirror(t *kernfsim.Tree, dir string, root int, st unix.Stat_t, opts MirrorOptions, rep *MirrorReport) *mirror {
	var sfs unix.Statfs_t
	onSysfs := unix.Fstatfs(root, &sfs) == nil && sfs.Type == unix.SYSFS_MAGIC
	return &mirror{t: t, dir: dir, root: root, rootID: idOf(&st), dev: st.Dev, opts: opts, rep: rep, sysfs: onSysfs,
		attrs: map[attrKey]*kernfsim.Attr{}, jobs: make(chan []*hostEntry, 64), readFile: hostReadFile, start: time.Now()}
}

// scan walks dir breadth first, handing attributes to the readers as it
// finds them, and returns every directory in the order walked (parents
// before children) once every read has finished.
func (m *mirror) scan() []*hostDir {
	slots := make([]*readSlot, m.opts.Readers)
	for i := range slots {
		slots[i] = &readSlot{}
		m.wg.Add(1)
		go m.reader(slots[i], nil)
	}
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() { m.watch(slots, stopWatch); close(watched) }()
	dirs := []*hostDir{{id: m.rootID}}
	for lo := 0; lo < len(dirs); {
		hi := len(dirs)
		m.scanLevel(dirs[lo:hi])
		for _, d := range dirs[lo:hi] {
			m.merge(&d.notes)
			for _, e := range d.entries {
				if e.sub != nil {
					dirs = append(dirs, e.sub)
				}
			}
		}
		lo = hi
	}
	close(m.jobs)
	m.wg.Wait()
	close(stopWatch)
	<-watched
	return dirs
}

// scanLevel scans dirs, one level of the walk, on up to Readers
// goroutines, each handing the attributes it finds to the readers.
func (m *mirror) scanLevel(dirs []*hostDir) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(m.opts.Readers, len(dirs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(dirs)); i = next.Add(1) - 1 {
				m.scanDir(dirs[i])
				m.handOut(dirs[i])
			}
		}()
	}
	wg.Wait()
}

// handOut gives d's attributes to read to the readers, jobSize at a time.
func (m *mirror) handOut(d *hostDir) {
	var job []*hostEntry
	for _, e := range d.entries {
		if e.file != nil {
			job = append(job, e)
		}
		if len(job) == jobSize {
			m.jobs <- job
			job = nil
		}
	}
	if job != nil {
		m.jobs <- job
	}
}

// scanDir lists d's entries and stats each one.
func (m *mirror) scanDir(d *hostDir) {
	dir := m.openDir(d)
	if dir == nil {
		return
	}
	defer dir.release()
	ents, err := listEntries(dir.fd)
	if err != nil {
		d.notes.skip(d.rel, SkipUnreadable+" ("+kernfsim.ErrnoName(kernfsim.Errno(err))+")")
		return
	}
	slices.SortFunc(ents, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	d.entries = make([]*hostEntry, 0, len(ents))
	for _, ent := range ents {
		if e := m.scanEntry(d, ent, dir); e != nil {
			d.entries = append(d.entries, e)
		}
	}
}

// openDir opens d for listing if it is still the directory listed; if
// not, it is reported and left empty (nil).
func (m *mirror) openDir(d *hostDir) *dirFD {
	rel := d.rel
	if rel == "" {
		rel = "."
	}
	fd, changed, err := openChecked(m.root, rel, unix.O_RDONLY|unix.O_DIRECTORY, d.id)
	switch {
	case changed:
		d.notes.changed = append(d.notes.changed, d.rel)
		return nil
	case err != nil:
		d.notes.skip(d.rel, SkipUnreadable+" ("+kernfsim.ErrnoName(kernfsim.Errno(err))+")")
		return nil
	}
	return newDirFD(fd)
}

// scanEntry stats one entry and returns what to add for it, or nil if it
// is skipped (and reported). On sysfs a regular file is left for its
// reader to stat (attrFile.stat), unless the no-read list names it.
func (m *mirror) scanEntry(d *hostDir, ent dirent, dir *dirFD) *hostEntry {
	name := ent.name
	n := &d.notes
	if kernfsim.ValidateName(name) != 0 {
		n.skip(joinSynthPath(d.rel, name), SkipInvalidName)
		return nil
	}
	if m.sysfs && ent.typ == unix.DT_REG && !onNoRead(m.opts.NoRead, d.rel, name) {
		dir.acquire()
		e := d.newEntry(name)
		e.spec.Kind = kernfsim.KindAttr
		e.file = d.newFile()
		*e.file = attrFile{dir: dir, name: name, parent: d.rel, sysfs: true, stat: true}
		return e
	}
	rel := joinSynthPath(d.rel, name)
	var st unix.Stat_t
	if err := unix.Fstatat(dir.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		n.skip(rel, SkipVanished)
		return nil
	}
	e := d.newEntry(name)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		e.spec = kernfsim.NodeSpec{Kind: kernfsim.KindDir}
		if st.Dev != m.dev {
			n.skip(rel, SkipMountPoint)
		} else {
			e.sub = &hostDir{rel: rel, id: idOf(&st)}
		}
	case unix.S_IFREG:
		e.spec = kernfsim.NodeSpec{Kind: kernfsim.KindAttr}
		if m.scanAttr(n, e, rel, st.Mode) {
			dir.acquire()
			e.file = d.newFile()
			*e.file = attrFile{dir: dir, name: name, parent: d.rel, id: idOf(&st), sysfs: m.sysfs}
		}
	case unix.S_IFLNK:
		target, changed, err := readSymlink(dir, name, idOf(&st), m.sysfs)
		switch {
		case changed:
			n.changed = append(n.changed, rel)
			return nil
		case err != nil:
			n.skip(rel, SkipBadSymlink+" ("+kernfsim.ErrnoName(kernfsim.Errno(err))+")")
			return nil
		}
		e.spec = kernfsim.NodeSpec{Kind: kernfsim.KindSymlink, Target: target}
	default:
		n.skip(rel, SkipFileType)
		return nil
	}
	e.key = keyOf(st)
	return e
}

// scanAttr decides how an attribute is filled: read by a reader (true) if
// it has a read bit and is not on the no-read list, otherwise added
// without contents.
func (m *mirror) scanAttr(n *dirNotes, e *hostEntry, rel string, mode uint32) bool {
	writable := mode&0o222 != 0
	e.writable = writable
	switch {
	case mode&0o444 == 0:
		e.notRead = true
		e.spec.Source = unreadable(writable)
	case matchTail(m.opts.NoRead, rel):
		n.noRead = append(n.noRead, rel)
		e.spec.Source = hostRead{errno: syscall.EIO}.source(writable)
	default:
		return true
	}
	return false
}

// onNoRead reports whether a pattern matches the entry name of the
// directory parent (matchTail); most names are told apart by the
// patterns' last component alone, without making the path.
func onNoRead(patterns []string, parent, name string) bool {
	for _, p := range patterns {
		last := p[strings.LastIndexByte(p, '/')+1:]
		if ok, _ := path.Match(last, name); ok {
			return matchTail(patterns, joinSynthPath(parent, name))
		}
	}
	return false
}

// unreadable is the source of an attribute without a read bit, added
// without reading it (opening it for reading fails EACCES in the tree, as
// on the host).
func unreadable(writable bool) kernfsim.Source {
	if writable {
		return writeOnly{}
	}
	return kernfsim.Static("")
}

// matchTail reports whether a pattern matches the last components of rel,
// as many as the pattern has.
func matchTail(patterns []string, rel string) bool {
	for _, p := range patterns {
		tail, k := rel, strings.Count(p, "/")+1
		for i := len(rel) - 1; i >= 0 && k > 0; i-- {
			if rel[i] == '/' {
				if k--; k == 0 {
					tail = rel[i+1:]
				}
			}
		}
		if ok, _ := path.Match(p, tail); ok {
			return true
		}
	}
	return false
}

// shared is the one *Attr for k: entries of the same mode and owner share it.
func (m *mirror) shared(k attrKey) *kernfsim.Attr {
	a := m.attrs[k]
	if a == nil {
		now := m.t.Now()
		a = &kernfsim.Attr{Mode: k.mode, Uid: k.uid, Gid: k.gid, Mtime: now, Ctime: now}
		m.attrs[k] = a
	}
	return a
}

// keyOf is what an entry's attributes are shared by.
func keyOf(st unix.Stat_t) attrKey {
	k := attrKey{fs.FileMode(st.Mode) & fs.ModePerm, st.Uid, st.Gid}
	if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		k.mode = 0o777
	}
	return k
}

// build adds the scanned directories to the tree, one AddBatch per
// directory, parents first, and gives the root the mode and owner of the
// mirrored dir.
func (m *mirror) build(dirs []*hostDir, root unix.Stat_t) error {
	a := m.shared(keyOf(root))
	err := m.t.Setattr(m.t.Root(), kernfsim.SetattrArgs{Valid: kernfsim.SetMode | kernfsim.SetUid | kernfsim.SetGid, Mode: a.Mode, Uid: a.Uid, Gid: a.Gid}, kernfsim.RootCred)
	if err != nil {
		return err
	}
	dirs[0].node = m.t.Root()
	for _, d := range dirs {
		if err := m.addDir(d); err != nil {
			return err
		}
	}
	return nil
}

// addDir adds d's entries under d.node and counts them.
func (m *mirror) addDir(d *hostDir) error {
	d.entries = slices.DeleteFunc(d.entries, func(e *hostEntry) bool {
		if e.vanished {
			m.rep.Skipped = append(m.rep.Skipped, MirrorSkip{Path: e.file.rel(), Reason: SkipVanished})
		}
		return e.vanished
	})
	batch := make([]kernfsim.BatchEntry, len(d.entries))
	for i, e := range d.entries {
		e.spec.Attr = m.shared(e.key)
		batch[i] = kernfsim.BatchEntry{Name: e.name, Spec: e.spec}
		m.count(e)
	}
	nodes, err := m.t.AddBatch(d.node, batch)
	if err != nil {
		return err
	}
	for i, e := range d.entries {
		if e.sub != nil {
			e.sub.node = nodes[i]
		}
	}
	return nil
}

// count adds e to the report.
func (m *mirror) count(e *hostEntry) {
	switch e.spec.Kind {
	case kernfsim.KindDir:
		m.rep.Dirs++
	case kernfsim.KindSymlink:
		m.rep.Symlinks++
	case kernfsim.KindAttr:
		m.rep.Attrs++
		switch {
		case e.notRead:
			m.rep.NotRead++
		case e.changed:
			m.rep.Changed = append(m.rep.Changed, e.file.rel())
		case e.timedOut:
			m.rep.TimedOut = append(m.rep.TimedOut, e.file.rel())
		case e.errno != 0:
			m.rep.ReadErrors[e.errno]++
		case e.truncated:
			m.rep.Truncated = append(m.rep.Truncated, e.file.rel())
		}
		if s, ok := e.spec.Source.(kernfsim.Static); ok {
			m.rep.Bytes += int64(len(s))
		} else if v, ok := e.spec.Source.(*kernfsim.Value); ok {
			m.rep.Bytes += int64(v.Len())
		}
	}
}

// failing is a mirrored attribute whose read failed on the host: Show
// fails with the same errno.
type failing struct{ errno syscall.Errno }

func (f failing) Show(context.Context, *bytes.Buffer) error { return f.errno }

// failingStorer is a writable failing attribute: stores are accepted and
// dropped.
type failingStorer struct{ failing }

func (failingStorer) Store(context.Context, []byte) error { return nil }

// hostReadFile reads a host attribute; tests replace it.
var hostReadFile = readHostFile

// hostRead is what reading one host attribute gave.
type hostRead struct {
	data      string
	truncated bool
	errno     syscall.Errno
	changed   bool     // the file was not the one listed: nothing was read
	stat      attrStat // what the reader found, for an attrFile.stat
}

// attrStat is the mode and owner a reader found for an attrFile.stat.
type attrStat struct {
	key      attrKey
	notRead  bool // no read bit: added unread, as scanAttr does
	vanished bool // gone: left out, as scanEntry does
}

// statAttr stats f by name, for an attrFile.stat whose open failed or
// whose read the watchdog gave up on.
func statAttr(f *attrFile) attrStat {
	var st unix.Stat_t
	if err := unix.Fstatat(f.dir.fd, f.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return attrStat{vanished: true}
	}
	return statOf(&st)
}

func statOf(st *unix.Stat_t) attrStat {
	return attrStat{key: keyOf(*st), notRead: st.Mode&0o444 == 0}
}

// jobSize is how many attributes a reader takes at a time: enough that
// handing them over costs little beside the reads.
const jobSize = 32

// readSlot is what one reader is reading, for the watchdog: the entry
// (nil between reads), when its read began, and the rest of its job.
// The reader stores since, job and next before e; the watchdog reads
// them only once its CAS of e has won, after which the reader, still in
// that read, stores nothing more.
type readSlot struct {
	e     atomic.Pointer[hostEntry]
	since atomic.Int64 // nanoseconds since mirror.start
	job   atomic.Pointer[[]*hostEntry]
	next  atomic.Int32 // the index in job after e
}

// reader reads first (what a reader given up on left of its job), then
// the jobs handed to it until they run out, or until the watchdog gives
// up on one of its reads: it then leaves the rest to the reader started
// in its place, and ends when its read returns, dropping what it read.
// Each read is made inline: no goroutine or timer per attribute.
func (m *mirror) reader(slot *readSlot, first []*hostEntry) {
	if first != nil && !m.readJob(slot, first) {
		return
	}
	for job := range m.jobs {
		if !m.readJob(slot, job) {
			return
		}
	}
	m.wg.Done()
}

// readJob reads each entry of job, and reports false if the watchdog gave
// up on one (the reader is then counted out of wg by the watchdog).
func (m *mirror) readJob(slot *readSlot, job []*hostEntry) bool {
	slot.job.Store(&job)
	for i, e := range job {
		slot.since.Store(int64(time.Since(m.start)))
		slot.next.Store(int32(i + 1))
		slot.e.Store(e)
		r := m.readFile(e.file, m.opts.MaxFileSize)
		e.file.dir.release()
		if !slot.e.CompareAndSwap(e, nil) {
			return false
		}
		m.fill(e, r)
	}
	return true
}

// watch gives up on every read that has taken longer than ReadTimeout,
// checking every eighth of it, until stop: the entry fails ETIMEDOUT,
// and a new reader takes the place of the one still in that read.
func (m *mirror) watch(slots []*readSlot, stop <-chan struct{}) {
	tick := time.NewTicker(max(m.opts.ReadTimeout/8, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		now := int64(time.Since(m.start))
		for i, s := range slots {
			e := s.e.Load()
			if e == nil || now-s.since.Load() < int64(m.opts.ReadTimeout) || !s.e.CompareAndSwap(e, nil) {
				continue
			}
			e.timedOut = true
			r := hostRead{errno: syscall.ETIMEDOUT}
			if e.file.stat { // its reader holds e.file.dir until its read returns
				r.stat = statAttr(e.file)
			}
			m.fill(e, r)
			rest := (*s.job.Load())[s.next.Load():]
			slots[i] = &readSlot{}
			m.wg.Add(1) // before the Done below: the count stays above zero
			go m.reader(slots[i], rest)
			m.wg.Done() // the reader given up on
		}
	}
}

// fill sets e from what reading it gave.
func (m *mirror) fill(e *hostEntry, r hostRead) {
	if e.file.stat {
		if r.stat.vanished {
			e.vanished = true
			return
		}
		e.key, e.writable = r.stat.key, r.stat.key.mode&0o222 != 0
		if r.stat.notRead {
			e.notRead = true // counted as such, timed out or not
			e.spec.Source = unreadable(e.writable)
			return
		}
	}
	if r.changed {
		r = hostRead{errno: syscall.EIO}
		e.changed = true
	}
	e.truncated, e.errno = r.truncated, r.errno
	e.spec.Source = r.source(e.writable)
}

// source is the attribute that serves r: its contents, or a failure with
// its errno; writable ones accept stores.
func (r hostRead) source(writable bool) kernfsim.Source {
	switch {
	case r.errno != 0 && writable:
		return failingStorer{failing{r.errno}}
	case r.errno != 0:
		return failing{r.errno}
	case writable:
		return kernfsim.NewValue(r.data)
	}
	return kernfsim.Static(r.data)
}

var readBufs = sync.Pool{New: func() any { b := make([]byte, kernfsim.PageSize+1); return &b }}

// readHostFile reads up to max bytes of f, and one more to tell whether
// there was more, if f is still the regular file listed (openRegular).
// On sysfs it opens f as it is, and a read shorter than asked is the
// end: kernfs gives an attribute's whole contents in one read. For an
// attrFile.stat it also takes f's mode and owner, from the open fd, or
// by name where the open failed; one without a read bit is not read.
func readHostFile(f *attrFile, max int) hostRead {
	var r hostRead
	fd, err := openHostFile(f, &r)
	if r.changed || r.stat.notRead || r.stat.vanished {
		return r
	}
	if err != nil {
		r.errno = kernfsim.Errno(err)
		return r
	}
	defer unix.Close(fd)
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	buf := (*bp)[:max+1]
	n := 0
	for n < len(buf) {
		k, err := unix.Read(fd, buf[n:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			r.errno = kernfsim.Errno(err)
			return r
		case k == 0:
			r.data = string(buf[:n])
			return r
		}
		n += k
		if f.sysfs && n < len(buf) {
			r.data = string(buf[:n])
			return r
		}
	}
	r.data, r.truncated = string(buf[:max]), true
	return r
}

// openHostFile opens f for reading, setting r.changed if it is not the
// file listed, and r.stat for an attrFile.stat; the fd is open only if
// err is nil and r says nothing is to be skipped.
func openHostFile(f *attrFile, r *hostRead) (int, error) {
	if !f.sysfs {
		fd, changed, err := openRegular(f.dir.fd, f.name, f.id)
		r.changed = changed
		return fd, err
	}
	fd, err := retry(func() (int, error) {
		return unix.Openat(f.dir.fd, f.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if !f.stat {
		return fd, err
	}
	var st unix.Stat_t
	switch {
	case err != nil:
		r.stat = statAttr(f)
		return -1, err
	case unix.Fstat(fd, &st) != nil:
		r.stat = statAttr(f)
	default:
		r.stat = statOf(&st)
		r.changed = st.Mode&unix.S_IFMT != unix.S_IFREG
	}
	if r.changed || r.stat.notRead || r.stat.vanished {
		unix.Close(fd)
		return -1, nil
	}
	return fd, nil
}

// String sums r up in a few lines, as the mount command prints it: the
// counts, then each kind of failure or omission with a few paths.
func (r MirrorReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mirrored %s in %v: %d directories, %d attributes (%d bytes of contents), %d symlinks",
		r.Dir, r.Elapsed.Round(time.Millisecond), r.Dirs, r.Attrs, r.Bytes, r.Symlinks)
	if len(r.NoRead) > 0 {
		fmt.Fprintf(&b, "\n  %d attributes are on the no-read list (reading changes or may hang the host): added unread, reading them fails EIO: %s", len(r.NoRead), examples(r.NoRead))
	}
	if r.NotRead > 0 {
		fmt.Fprintf(&b, "\n  %d attributes have no read bit: added unread, reading them fails EACCES as on the host", r.NotRead)
	}
	if len(r.ReadErrors) > 0 {
		fmt.Fprintf(&b, "\n  %d attributes failed to read on the host and fail the same way: %s", sumCounts(r.ReadErrors), errnoCounts(r.ReadErrors))
	}
	if len(r.Truncated) > 0 {
		fmt.Fprintf(&b, "\n  %d attributes longer than %d bytes were cut: %s", len(r.Truncated), r.Options.MaxFileSize, examples(r.Truncated))
	}
	if len(r.TimedOut) > 0 {
		fmt.Fprintf(&b, "\n  %d attributes took over %v to read and fail ETIMEDOUT: %s", len(r.TimedOut), r.Options.ReadTimeout, examples(r.TimedOut))
	}
	if len(r.Changed) > 0 {
		fmt.Fprintf(&b, "\n  %d entries were another file when opened than when listed (swapped while loading; nothing read from them): attributes fail EIO, directories added empty, symlinks left out: %s", len(r.Changed), examples(r.Changed))
	}
	for _, reason := range skipReasons(r.Skipped) {
		var paths []string
		for _, s := range r.Skipped {
			if s.Reason == reason {
				paths = append(paths, s.Path)
			}
		}
		fmt.Fprintf(&b, "\n  %d skipped (%s): %s", len(paths), reason, examples(paths))
	}
	return b.String()
}

func sumCounts(m map[syscall.Errno]int) (n int) {
	for _, c := range m {
		n += c
	}
	return n
}

// errnoCounts is "12 EIO, 3 EINVAL", most frequent first.
func errnoCounts(m map[syscall.Errno]int) string {
	errnos := make([]syscall.Errno, 0, len(m))
	for e := range m {
		errnos = append(errnos, e)
	}
	slices.SortFunc(errnos, func(a, b syscall.Errno) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return int(a) - int(b)
	})
	parts := make([]string, len(errnos))
	for i, e := range errnos {
		parts[i] = fmt.Sprintf("%d %s", m[e], kernfsim.ErrnoName(e))
	}
	return strings.Join(parts, ", ")
}

// skipReasons are the distinct reasons in skips, in order of appearance.
func skipReasons(skips []MirrorSkip) []string {
	var reasons []string
	for _, s := range skips {
		if !slices.Contains(reasons, s.Reason) {
			reasons = append(reasons, s.Reason)
		}
	}
	return reasons
}

// examples is the first few paths, and how many more.
func examples(paths []string) string {
	const few = 4
	if len(paths) <= few {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:few], ", "), len(paths)-few)
}
