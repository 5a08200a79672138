package fusefs

import (
	"fmt"
	"os"

	"github.com/kernfsim/kernfsim/fusefs/uring"
)

// TransportKind names how FUSE requests reach the server. Package uring
// runs the transport itself.
type TransportKind string

const (
	// TransportAuto uses io_uring where the kernel offers it and /dev/fuse
	// otherwise.
	TransportAuto TransportKind = "auto"
	// TransportDevFuse is go-fuse's loop on /dev/fuse: one queue, read by
	// goroutines spawned on demand.
	TransportDevFuse TransportKind = "devfuse"
	// TransportURing is FUSE-over-io_uring: one queue per possible CPU,
	// each served by a thread pinned to that CPU (Linux 6.14+).
	TransportURing TransportKind = "uring"
)

// Transports lists the valid values of MountOptions.Transport.
var Transports = []TransportKind{TransportAuto, TransportDevFuse, TransportURing}

// ParseTransport returns the transport kind named s, one of Transports.
func ParseTransport(s string) (TransportKind, error) {
	for _, t := range Transports {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("invalid transport %q: valid values are auto, devfuse, uring", s)
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
