package uring

import (
	"bytes"
	"encoding/binary"
	"log"
	"regexp"
	"testing"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// extBytes is a request's extensions as the kernel appends them: one
// security context (name, value) and the supplementary groups.
func extBytes(name, value string, groups ...uint32) []byte {
	var b []byte
	u32 := func(v uint32) { b = binary.NativeEndian.AppendUint32(b, v) }
	pad := func() {
		for len(b)%8 != 0 {
			b = append(b, 0)
		}
	}
	if name != "" {
		start := len(b)
		u32(0) // size, below
		u32(1) // one context
		u32(uint32(len(value)))
		u32(0)
		b = append(append(append(b, name...), 0), value...)
		pad()
		binary.NativeEndian.PutUint32(b[start:], uint32(len(b)-start))
	}
	if len(groups) > 0 {
		start := len(b)
		u32(0)
		u32(extGroups)
		u32(uint32(len(groups)))
		for _, g := range groups {
			u32(g)
		}
		pad()
		binary.NativeEndian.PutUint32(b[start:], uint32(len(b)-start))
	}
	return b
}

// withExt is a MKDIR of "dir" carrying ext, declaring extWords 8-byte
// words of extensions.
func withExt(ext []byte, extWords int) request {
	return request{unsafe.Sizeof(fuse.MkdirIn{}), func(p unsafe.Pointer) {
		(*fuse.MkdirIn)(p).Mode = 0o755
		(*fuse.InHeader)(p).TotalExtlen = uint16(extWords)
	}, "dir\x00\x00\x00\x00\x00" + string(ext)}
}

var extCases = []struct {
	name string
	ext  []byte
}{
	{"secctx", extBytes("security.selinux", "unconfined_u:object_r:user_home_t:s0\x00")},
	{"groups", extBytes("", "", 1000)},
	{"both", extBytes("security.selinux", "system_u:object_r:tmp_t:s0\x00", 10, 20)},
}

// TestExtMatchesGoFuse: a request with extensions reaches the file
// system with the same arguments (the extensions cut off) over the
// queues as through go-fuse's decoder, and malformed ones are answered
// EIO by both.
func TestExtMatchesGoFuse(t *testing.T) {
	for _, c := range extCases {
		r := withExt(c.ext, len(c.ext)/8)
		if want, got := serveBoth(t, opMkdir, 5, r, fuse.MountOptions{}, nil); want != got {
			t.Errorf("%s:\ngo-fuse: %s\nqueues:  %s", c.name, want, got)
		}
	}
	for _, bad := range []request{
		withExt(extBytes("", "", 7), 40),            // longer than the payload
		withExt([]byte{9, 0, 0, 0, 32, 0, 0, 0}, 1), // a size not a multiple of 8
	} {
		if want, got := serveBoth(t, opMkdir, 5, bad, fuse.MountOptions{}, nil); want != got {
			t.Errorf("malformed:\ngo-fuse: %s\nqueues:  %s", want, got)
		}
	}
}

var extRE = regexp.MustCompile(` ext\{[^}]*\}`)

// TestExtDebugMatchesGoFuse: the debug log shows a request's extensions
// exactly as go-fuse's debug log does (go-fuse's fs.TestExtSecurityCtx
// and TestExtSuppGroup look for it there).
func TestExtDebugMatchesGoFuse(t *testing.T) {
	for _, c := range extCases {
		r := withExt(c.ext, len(c.ext)/8)
		var goLog bytes.Buffer
		opts := fuse.MountOptions{Debug: true, Logger: log.New(&goLog, "", 0)}
		ps := fuse.NewProtocolServer(fuse.NewDefaultRawFileSystem(), &opts)
		in := make([]byte, r.inSize)
		h := (*fuse.InHeader)(unsafe.Pointer(&in[0]))
		*h = fuse.InHeader{Length: uint32(int(r.inSize) + len(r.payload)), Opcode: opMkdir, Unique: 2, NodeId: 5}
		r.fill(unsafe.Pointer(h))
		ps.HandleRequest([][]byte{append(in, r.payload...)}, [][]byte{make([]byte, 4096)})
		want := extRE.FindString(goLog.String())
		if want == "" {
			t.Fatalf("%s: go-fuse logged no ext{…}: %s", c.name, goLog.String())
		}
		var ours bytes.Buffer
		logRequest(log.New(&ours, "", 0), 0, h, []byte(r.payload))
		if got := extRE.FindString(ours.String()); got != want {
			t.Errorf("%s: logged %q, want go-fuse's %q\n(ours: %s)", c.name, got, want, ours.String())
		}
	}
	var none bytes.Buffer
	logRequest(log.New(&none, "", 0), 0, &fuse.InHeader{Opcode: opMkdir}, []byte("dir\x00"))
	if extRE.MatchString(none.String()) {
		t.Errorf("a request without extensions logged %q", none.String())
	}
}
