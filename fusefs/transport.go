package fusefs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/fusefs/uring"
)

// Transport says how FUSE requests reach the server.
type Transport string

const (
	// TransportAuto uses io_uring where the kernel offers it and /dev/fuse
	// otherwise.
	TransportAuto Transport = "auto"
	// TransportDevFuse is go-fuse's loop on /dev/fuse: one queue, read by
	// goroutines spawned on demand.
	TransportDevFuse Transport = "devfuse"
	// TransportURing is FUSE-over-io_uring: one queue per possible CPU,
	// each served by a thread pinned to that CPU (Linux 6.14+).
	TransportURing Transport = "uring"
)

// Transports lists the valid values of MountOptions.Transport.
var Transports = []Transport{TransportAuto, TransportDevFuse, TransportURing}

// ParseTransport checks a --transport value.
func ParseTransport(s string) (Transport, error) {
	for _, t := range Transports {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("invalid value %q for --transport: valid values are auto, devfuse, uring", s)
}

// uringCheck is uringUnavailable; tests replace it to play a kernel
// without io_uring.
var uringCheck = uringUnavailable

// uringUnavailable says why this process cannot serve over io_uring, or
// returns nil.
func uringUnavailable() error {
	if err := uring.Available(); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: the server mounts the connection itself, which needs root (CAP_SYS_ADMIN); run as root", uring.ErrUnavailable)
	}
	return nil
}

// ringInit is the file system go-fuse sees on an io_uring connection: the
// Server, plus an Init that registers the queues once INIT is answered.
type ringInit struct {
	*Server
	ring  *uring.Transport
	devFD int   // the queues' /dev/fuse descriptor
	err   error // why the connection fell back to /dev/fuse; set by Init
}

// Init runs after go-fuse has answered INIT and before it serves.
func (r *ringInit) Init(srv *fuse.Server) {
	r.Server.Init(srv)
	if srv.KernelSettings().Flags64()&fuse.CAP_OVER_IO_URING == 0 {
		r.ring.Abandon()
		r.err = errors.New("the kernel did not offer io_uring at INIT")
		return
	}
	r.err = r.ring.Register(r.devFD)
}

// mountURing mounts mnt on a /dev/fuse descriptor of its own, starts the
// per-CPU queues, and lets go-fuse answer INIT through /dev/fd/N with
// io_uring offered. If the queues cannot be made, or the kernel refuses
// to register them, the connection is served over /dev/fuse and why is
// returned as fellBack (with strict, that is an error instead).
func mountURing(fs *Server, mnt string, opts MountOptions, strict bool, onFatal func(error)) (srv *fuse.Server, ring *uring.Transport, fellBack error, err error) {
	mo := fuseOptions(opts)
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open /dev/fuse: %w", err)
	}
	if err := unix.Mount(mo.FsName, mnt, "fuse."+mo.Name, unix.MS_NOSUID|unix.MS_NODEV, mountData(fd, mo)); err != nil {
		unix.Close(fd)
		return nil, nil, nil, mountRefused(mnt, err)
	}
	ringFD, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err == nil {
		ring, err = uring.Start(fs, ringFD, uring.Config{MaxWrite: mo.MaxWrite, DisableXAttrs: mo.DisableXAttrs, Debug: mo.Debug, Logger: mo.Logger}, onFatal)
		if err != nil {
			unix.Close(ringFD)
		}
	}
	if err != nil && strict {
		unix.Unmount(mnt, unix.MNT_DETACH)
		unix.Close(fd)
		return nil, nil, nil, fmt.Errorf("--transport uring: %w", err)
	}
	var rfs fuse.RawFileSystem = fs
	var ri *ringInit
	if err != nil {
		fellBack = err
	} else {
		mo.ExtraCapabilities |= fuse.CAP_OVER_IO_URING
		ri = &ringInit{Server: fs, ring: ring, devFD: ringFD}
		rfs = ri
	}
	mo.DirectMount = false // mounted already: go-fuse takes the descriptor
	srv, err = fuse.NewServer(rfs, fmt.Sprintf("/dev/fd/%d", fd), mo)
	if err != nil {
		unix.Unmount(mnt, unix.MNT_DETACH)
		if ring != nil {
			ring.Abandon()
			go func() { <-ring.Done(); unix.Close(ringFD) }()
		}
		return nil, nil, nil, fmt.Errorf("mount %s: %w", mnt, err)
	}
	if ring != nil {
		go func() { <-ring.Done(); unix.Close(ringFD) }()
	}
	if ri != nil && ri.err != nil {
		fellBack = ri.err
		if strict {
			return srv, ring, nil, fmt.Errorf("--transport uring: %w", ri.err)
		}
	}
	return srv, ring, fellBack, nil
}

// mountData is the mount(2) data go-fuse's direct mount passes, for a
// descriptor opened here.
func mountData(fd int, mo *fuse.MountOptions) string {
	r := []string{
		fmt.Sprintf("fd=%d", fd),
		fmt.Sprintf("rootmode=%o", syscall.S_IFDIR),
		fmt.Sprintf("user_id=%d", os.Geteuid()),
		fmt.Sprintf("group_id=%d", os.Getegid()),
		fmt.Sprintf("max_read=%d", mo.MaxWrite),
	}
	r = append(r, mo.Options...)
	if mo.AllowOther {
		r = append(r, "allow_other")
	}
	return strings.Join(r, ",")
}
