package uring

// Cache retrieval over the rings.
//
// go-fuse's InodeRetrieveCache (and fs.Inode.ReadCache, and nodefs'
// FileRetrieveCache) writes NOTIFY_RETRIEVE on /dev/fuse and waits for
// the kernel's NOTIFY_REPLY in a table of its Server that only its
// /dev/fuse loop reads. Over io_uring the kernel sends that reply on a
// queue, so the queue delivers it to go-fuse's table itself. go-fuse
// v2.12 exports no way to do that; the table is reached by reflection.
// Every field used is checked by name and type (goFuseLayout) before the
// mount: where go-fuse's layout differs, io_uring is refused
// (ErrUnavailable) and go-fuse's /dev/fuse loop serves, retrieval
// included.
//
// Two more things the rings need, set once at INIT (hookGoFuse):
//   - go-fuse numbers retrieves from 0, and the kernel uses that number
//     as the NOTIFY_REPLY's unique, which is also the id the queue
//     commits the entry by; the kernel refuses a commit of unique 0 and
//     finds a request by its unique, so go-fuse's counter is moved to
//     1<<63, above every unique the kernel gives its own requests.
//   - the kernel puts NOTIFY_REPLY's 40-byte fuse_notify_retrieve_in in
//     the payload before the data (Linux 6.18), and a reply of max_write
//     bytes overruns the payload buffer, which the kernel answers with a
//     BUG in fuse_copy_fill. go-fuse asks at most MountOptions.MaxWrite
//     per retrieve, so the MaxWrite it reads after INIT (the kernel got
//     its own in the INIT reply) is lowered to a page under the payload.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// retrieveRequest mirrors go-fuse's retrieveCacheRequest (fuse/server.go);
// goFuseLayout checks that every field has the same name, type and
// offset.
type retrieveRequest struct {
	nodeid uint64
	offset uint64
	dest   []byte
	n      int
	st     fuse.Status
	ready  chan struct{}
}

// retrieveFirst is where go-fuse's retrieve numbering is moved: above
// every unique the kernel numbers its own requests with.
const retrieveFirst = 1 << 63

// retrieveIn is the size of fuse_notify_retrieve_in, which precedes a
// NOTIFY_REPLY's data in the payload.
const retrieveIn = int(unsafe.Sizeof(fuse.NotifyRetrieveIn{}) - unsafe.Sizeof(fuse.InHeader{}))

// goFuseField is one field of go-fuse's Server this package reaches.
type goFuseField struct {
	path  []string     // field names from fuse.Server down
	typ   reflect.Type // nil: checked by check instead
	check func(reflect.Type) error
}

var goFuseFields = []goFuseField{
	{path: []string{"protocolServer", "retrieveMu"}, typ: reflect.TypeFor[sync.Mutex]()},
	{path: []string{"protocolServer", "retrieveNext"}, typ: reflect.TypeFor[uint64]()},
	{path: []string{"protocolServer", "retrieveTab"}, check: checkRetrieveTab},
	{path: []string{"protocolServer", "opts"}, typ: reflect.TypeFor[*fuse.MountOptions]()},
	{path: []string{"fuseFD"}, check: checkFuseFD},
}

// goFuseLayout says why go-fuse's Server lacks what this package reaches
// inside it for, or nil. It is computed once.
var goFuseLayout = sync.OnceValue(func() error {
	for _, f := range goFuseFields {
		if err := f.verify(); err != nil {
			return fmt.Errorf("go-fuse's fuse.Server is not the layout this package knows (v2.12): %w", err)
		}
	}
	return nil
})

func (f goFuseField) verify() error {
	t := reflect.TypeFor[fuse.Server]()
	var sf reflect.StructField
	for _, name := range f.path {
		if t.Kind() != reflect.Struct {
			return fmt.Errorf("%s is not a struct", t)
		}
		var ok bool
		if sf, ok = t.FieldByName(name); !ok {
			return fmt.Errorf("no field %s in %s", name, t)
		}
		t = sf.Type
	}
	if f.check != nil {
		return f.check(t)
	}
	if t != f.typ {
		return fmt.Errorf("field %s is %s, want %s", sf.Name, t, f.typ)
	}
	return nil
}

// checkRetrieveTab checks go-fuse's map of waiting retrieves against
// retrieveRequest.
func checkRetrieveTab(t reflect.Type) error {
	if t.Kind() != reflect.Map || t.Key() != reflect.TypeFor[uint64]() || t.Elem().Kind() != reflect.Pointer {
		return fmt.Errorf("retrieveTab is %s, want map[uint64]*retrieveCacheRequest", t)
	}
	return sameFields(t.Elem().Elem(), reflect.TypeFor[retrieveRequest]())
}

// checkFuseFD checks the request sizes go-fuse accounts its
// MaxInflightRequestBytes in (see inflight.go).
func checkFuseFD(t reflect.Type) error {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("fuseFD is %s, want a pointer to a struct", t)
	}
	for _, name := range []string{"reqAllocBytes", "readBufBytes"} {
		f, ok := t.Elem().FieldByName(name)
		if !ok || f.Type != reflect.TypeFor[int]() {
			return fmt.Errorf("fuseFD has no int field %s", name)
		}
	}
	return nil
}

// sameFields reports how got's fields differ from want's in name, type
// or offset, or nil.
func sameFields(got, want reflect.Type) error {
	if got.Kind() != reflect.Struct || got.NumField() != want.NumField() || got.Size() != want.Size() {
		return fmt.Errorf("%s is not laid out as %s", got, want)
	}
	for i := range want.NumField() {
		g, w := got.Field(i), want.Field(i)
		if g.Name != w.Name || g.Type != w.Type || g.Offset != w.Offset {
			return fmt.Errorf("%s field %d is %s %s at %d, want %s %s at %d", got, i, g.Name, g.Type, g.Offset, w.Name, w.Type, w.Offset)
		}
	}
	return nil
}

// field returns a settable view of the field at path inside srv.
func field(srv *fuse.Server, path ...string) reflect.Value {
	v := reflect.ValueOf(srv).Elem()
	for _, name := range path {
		v = v.FieldByName(name)
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

// retrieveTable is go-fuse's table of retrieves waiting for the kernel's
// NOTIFY_REPLY, inside its Server.
type retrieveTable struct {
	mu  *sync.Mutex   // go-fuse's retrieveMu
	tab reflect.Value // go-fuse's retrieveTab field: protected by mu (Serve replaces the map at its end)
	log func(format string, args ...any)
}

// hookGoFuse readies go-fuse's Server srv, once it has answered INIT and
// before the queues register, for serving over rings whose entries have
// payload bytes of payload: h gets go-fuse's retrieve table, having moved
// its numbering and capped each retrieve (see the file's doc), and
// go-fuse's bytes per request (inflight.go). goFuseLayout must have
// returned nil.
func hookGoFuse(srv *fuse.Server, h *handler, payload int) {
	h.retrieve = goFuseRetrieves(srv, payload)
	h.limit.per = requestBytes(srv)
}

func goFuseRetrieves(srv *fuse.Server, payload int) *retrieveTable {
	rt := &retrieveTable{
		mu:  (*sync.Mutex)(field(srv, "protocolServer", "retrieveMu").Addr().UnsafePointer()),
		tab: field(srv, "protocolServer", "retrieveTab"),
	}
	opts := field(srv, "protocolServer", "opts").Interface().(*fuse.MountOptions)
	rt.log = opts.Logger.Printf
	opts.MaxWrite = retrieveCap(opts.MaxWrite, payload)
	next := (*uint64)(field(srv, "protocolServer", "retrieveNext").Addr().UnsafePointer())
	rt.mu.Lock()
	*next = max(*next, retrieveFirst)
	rt.mu.Unlock()
	return rt
}

// retrieveCap is the largest retrieve a ring entry with payload bytes of
// payload can carry, under the kernel's max_write: a page less, leaving
// room for the fuse_notify_retrieve_in the kernel puts before the data.
func retrieveCap(maxWrite, payload int) int {
	return max(1, min(maxWrite, payload-hdrPage))
}

// errNoRetrieve is the answer for a NOTIFY_REPLY on a queue that has no
// retrieve table (a test's handler).
var errNoRetrieve = errors.New("no retrieve table")

// notifyReply hands the kernel's NOTIFY_REPLY, whose header is in and
// whose payload (fuse_notify_retrieve_in, then the data) is data, to the
// go-fuse retrieve waiting for it, as go-fuse's doNotifyReply does. The
// kernel expects no reply: the entry is committed with status OK.
func (h *handler) notifyReply(in *fuse.InHeader, data []byte) (int, fuse.Status) {
	if h.retrieve == nil {
		h.logger.Printf("notify reply: %v", errNoRetrieve)
		return 0, fuse.OK
	}
	h.retrieve.deliver(in, data)
	return 0, fuse.OK
}

// deliver completes the waiting retrieve in.Unique names with data.
func (rt *retrieveTable) deliver(in *fuse.InHeader, data []byte) {
	if len(data) < retrieveIn {
		rt.log("notify reply: %d bytes, shorter than fuse_notify_retrieve_in", len(data))
		return
	}
	offset := binary.NativeEndian.Uint64(data[8:]) // fuse_notify_retrieve_in.offset
	data = data[retrieveIn:]
	r := rt.take(in.Unique)
	if r == nil {
		rt.log("notify reply: unexpected unique - ignoring")
		return
	}
	r.n, r.st = 0, fuse.EIO
	defer close(r.ready)
	switch {
	case r.nodeid != in.NodeId:
		rt.log("notify reply: inode mismatch: expected %d, got %d", r.nodeid, in.NodeId)
	case r.offset != offset:
		rt.log("notify reply: offset mismatch: expected @%d, got @%d", r.offset, offset)
	default:
		if len(r.dest) < len(data) {
			rt.log("notify reply: too much data: requested %db, got %db (will use only %db)", len(r.dest), len(data), len(r.dest))
		}
		r.n, r.st = copy(r.dest, data), fuse.OK
	}
}

// take removes and returns the retrieve numbered unique, nil if none
// waits.
func (rt *retrieveTable) take(unique uint64) *retrieveRequest {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	key := reflect.ValueOf(unique)
	v := rt.tab.MapIndex(key)
	if !v.IsValid() || v.IsNil() {
		return nil
	}
	rt.tab.SetMapIndex(key, reflect.Value{})
	return (*retrieveRequest)(v.UnsafePointer())
}
