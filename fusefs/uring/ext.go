package uring

// Request extensions (struct fuse_ext_header in linux/fuse.h): with
// CAP_SECURITY_CTX or CAP_CREATE_SUPP_GROUP negotiated, the kernel
// appends to a creating request's arguments the caller's security
// contexts and supplementary group, TotalExtlen 8-byte words in all. As
// go-fuse does (fuse/ext.go, request.splitExt), the queues cut them off
// the arguments before the file system sees them, answer EIO where they
// are malformed, and show them in the debug log as go-fuse shows them:
// ext{groups=[…] secctx=[name:"value" …]}.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/hanwen/go-fuse/v2/fuse"
)

const (
	extMaxSecCtx = 31 // FUSE_MAX_NR_SECCTX: a header type up to this is that many contexts
	extGroups    = 32 // FUSE_EXT_GROUPS
	extHeader    = 8  // struct fuse_ext_header
	secCtxHeader = 8  // struct fuse_secctx
)

// requestExt is a request's parsed extensions.
type requestExt struct {
	groups []uint32
	secctx [][2][]byte // name, value
}

// args splits data, a request's payload, into its arguments and its
// extensions; ok is false where the extensions are malformed (go-fuse
// then answers EIO).
func args(in *fuse.InHeader, data []byte) (arg, ext []byte, ok bool) {
	n := int(in.TotalExtlen) * 8
	if n == 0 {
		return data, nil, true
	}
	if n > len(data) {
		return data, nil, false
	}
	split := len(data) - n
	return data[:split], data[split:], true
}

// splitExt returns the arguments of the request in with payload data,
// cut of its extensions, or EIO (logged, as go-fuse logs it) where those
// are malformed.
func (h *handler) splitExt(in *fuse.InHeader, data []byte) ([]byte, fuse.Status) {
	arg, ext, ok := args(in, data)
	if ok && ext != nil {
		var e requestExt
		ok = e.parse(ext)
	}
	if !ok {
		h.logger.Printf("op %s: bad request extension: %v", opName(in.Opcode), fuse.EIO)
		return nil, fuse.EIO
	}
	return arg, fuse.OK
}

// String is go-fuse's rendering of request extensions (requestExt.String
// in fuse/ext.go); TestExtDebugMatchesGoFuse holds it to go-fuse's.
func (e *requestExt) String() string {
	var parts []string
	if len(e.groups) > 0 {
		parts = append(parts, fmt.Sprintf("groups=%v", e.groups))
	}
	if len(e.secctx) > 0 {
		var ctxs []string
		for _, c := range e.secctx {
			ctxs = append(ctxs, fmt.Sprintf("%s:%q", c[0], bytes.TrimRight(c[1], "\x00")))
		}
		parts = append(parts, "secctx=["+strings.Join(ctxs, " ")+"]")
	}
	return "ext{" + strings.Join(parts, " ") + "}"
}

// parse parses b, a request's extensions, as go-fuse does, and reports
// whether they are well formed.
func (e *requestExt) parse(b []byte) bool {
	for len(b) > 0 {
		if len(b) < extHeader {
			return false
		}
		size := binary.NativeEndian.Uint32(b)
		typ := binary.NativeEndian.Uint32(b[4:])
		if size < extHeader || size%8 != 0 || uint64(size) > uint64(len(b)) {
			return false
		}
		rec := b[extHeader:size]
		b = b[size:]
		switch {
		case typ <= extMaxSecCtx:
			if !e.parseSecCtx(rec, int(typ)) {
				return false
			}
		case typ == extGroups:
			if !e.parseGroups(rec) {
				return false
			}
		}
	}
	return true
}

func (e *requestExt) parseGroups(rec []byte) bool {
	if len(rec) < 4 {
		return false
	}
	nr := binary.NativeEndian.Uint32(rec)
	rec = rec[4:]
	if uint64(nr) > uint64(len(rec)/4) {
		return false
	}
	for i := range int(nr) {
		e.groups = append(e.groups, binary.NativeEndian.Uint32(rec[4*i:]))
	}
	return true
}

// parseSecCtx parses nr contexts: each a fuse_secctx, name\0 and value,
// padded to 8 bytes.
func (e *requestExt) parseSecCtx(rec []byte, nr int) bool {
	for range nr {
		if len(rec) < secCtxHeader {
			return false
		}
		valSize := binary.NativeEndian.Uint32(rec)
		rest := rec[secCtxHeader:]
		nul := bytes.IndexByte(rest, 0)
		if nul < 0 {
			return false
		}
		name := rest[:nul]
		rest = rest[nul+1:]
		if uint64(valSize) > uint64(len(rest)) {
			return false
		}
		e.secctx = append(e.secctx, [2][]byte{name, rest[:valSize]})
		used := secCtxHeader + nul + 1 + int(valSize)
		rec = rec[min((used+7)&^7, len(rec)):]
	}
	return true
}

// extDebug is what the debug log shows of a request's extensions: "" if
// it has none, else " " and go-fuse's rendering (with "(malformed)"
// where they do not parse).
func extDebug(in *fuse.InHeader, data []byte) string {
	_, ext, ok := args(in, data)
	if ext == nil && ok {
		return ""
	}
	var e requestExt
	if !ok || !e.parse(ext) {
		return " ext{malformed}"
	}
	return " " + e.String()
}
