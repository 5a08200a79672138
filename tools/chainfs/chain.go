package main

import (
	"strconv"
	"strings"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// chain serves devices/system/cpu/cpuN/topology/<attr> for ncpu CPUs
// from immutable tables, with zero entry and attribute timeouts, as
// ../shared/anchors/libfuse/chain_ll_uring.c does: the same inode
// numbers, modes and file contents, so that the two servers differ only
// in their transports.
type chain struct {
	fuse.RawFileSystem // everything else: go-fuse's defaults (ENOSYS for most)
}

const (
	ncpu  = 64
	attr0 = 1000 // the first attribute's inode
)

var attrs = [...]string{"core_id", "die_id", "physical_package_id", "cluster_id", "core_cpus", "core_cpus_list",
	"core_siblings", "core_siblings_list", "die_cpus", "die_cpus_list", "package_cpus", "package_cpus_list",
	"thread_siblings", "thread_siblings_list", "cluster_cpus", "cluster_cpus_list"}

// Inodes: 1 the root, 2 devices, 3 system, 4 cpu, 5+2i cpuI,
// 6+2i cpuI/topology, attr0+i*len(attrs)+a the attributes.
func child(parent uint64, name string) uint64 {
	switch {
	case parent == 1 && name == "devices":
		return 2
	case parent == 2 && name == "system":
		return 3
	case parent == 3 && name == "cpu":
		return 4
	case parent == 4 && strings.HasPrefix(name, "cpu"):
		i, err := strconv.Atoi(name[3:])
		if err != nil || i < 0 || i >= ncpu || name[3:] != strconv.Itoa(i) {
			return 0
		}
		return 5 + 2*uint64(i)
	case parent >= 5 && parent < 5+2*ncpu && (parent-5)%2 == 0 && name == "topology":
		return parent + 1
	case parent >= 6 && parent < 5+2*ncpu && (parent-6)%2 == 0:
		for a, n := range attrs {
			if n == name {
				return attr0 + (parent-6)/2*uint64(len(attrs)) + uint64(a)
			}
		}
	}
	return 0
}

func fill(ino uint64, a *fuse.Attr) {
	*a = fuse.Attr{Ino: ino}
	if ino < attr0 {
		a.Mode, a.Nlink = fuse.S_IFDIR|0o755, 2
	} else {
		a.Mode, a.Nlink, a.Size = fuse.S_IFREG|0o444, 1, 4096
	}
}

func (chain) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	c := child(h.NodeId, name)
	if c == 0 {
		return fuse.ENOENT
	}
	out.NodeId, out.Generation = c, 1
	fill(c, &out.Attr)
	return fuse.OK
}

func (chain) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	fill(in.NodeId, &out.Attr)
	return fuse.OK
}

func (chain) Open(_ <-chan struct{}, _ *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	out.OpenFlags = fuse.FOPEN_DIRECT_IO
	return fuse.OK
}

func (chain) Read(_ <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	b := strconv.AppendUint(buf[:0], (in.NodeId-attr0)/uint64(len(attrs))/2, 10)
	b = append(b, '\n')
	if in.Offset >= uint64(len(b)) {
		return fuse.ReadResultData(nil), fuse.OK
	}
	b = b[in.Offset:]
	return fuse.ReadResultData(b[:min(len(b), int(in.Size))]), fuse.OK
}

func (chain) Release(<-chan struct{}, *fuse.ReleaseIn) {}

// Flush is not implemented, as in the reference server: libfuse answers
// ENOSYS for an operation its server leaves out, and the kernel then
// sends no more FLUSHes on the connection.
func (chain) Flush(<-chan struct{}, *fuse.FlushIn) fuse.Status { return fuse.ENOSYS }
