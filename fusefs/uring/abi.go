package uring

import "unsafe"

// FUSE-over-io_uring ABI (include/uapi/linux/fuse.h, Linux 6.14+).
const (
	cmdRegister       = 1 // FUSE_IO_URING_CMD_REGISTER
	cmdCommitAndFetch = 2 // FUSE_IO_URING_CMD_COMMIT_AND_FETCH

	// struct fuse_uring_req_header, in the entry's header page.
	hdrInOut    = 0   // fuse_in_header from the kernel, fuse_out_header from us
	hdrOpIn     = 128 // the opcode's fixed in-struct (in_args[0])
	hdrEntInOut = 256 // struct fuse_uring_ent_in_out
	hdrSize     = 288

	// Where the 40-byte fuse_in_header is copied so that it directly
	// precedes the in-struct at hdrOpIn, which makes go-fuse's in-structs
	// (InHeader followed by the opcode's fields) valid in place.
	hdrInCopy = hdrOpIn - inHeaderSize

	inHeaderSize  = 40
	outHeaderSize = 16

	// The entry's two iovecs for REGISTER live in its header page too.
	hdrIovecs = 512
	hdrPage   = 4096

	minPayload = 8192 // FUSE_MIN_READ_BUFFER
)

// entInOut is struct fuse_uring_ent_in_out.
type entInOut struct {
	flags     uint64
	commitID  uint64 // the request's unique
	payloadSz uint32 // bytes of payload in (from the kernel) or out (from us)
	padding   uint32
	reserved  uint64
}

// cmdReq is struct fuse_uring_cmd_req, the start of the SQE's command area.
type cmdReq struct {
	flags    uint64
	commitID uint64
	qid      uint16
	pad      [6]uint8
}

var (
	_ [hdrSize - hdrEntInOut - int(unsafe.Sizeof(entInOut{}))]struct{}
	_ [int(unsafe.Sizeof(entInOut{})) - (hdrSize - hdrEntInOut)]struct{}
	_ [80 - int(unsafe.Sizeof(cmdReq{}))]struct{}
	_ [int(unsafe.Sizeof(sqe{})) - 128]struct{}
	_ [128 - int(unsafe.Sizeof(sqe{}))]struct{}
	_ [int(unsafe.Sizeof(params{})) - 120]struct{}
	_ [120 - int(unsafe.Sizeof(params{}))]struct{}
)
