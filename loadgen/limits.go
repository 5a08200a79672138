package loadgen

import (
	"fmt"
	"os"

	"github.com/kernfsim/kernfsim/internal/meminfo"
	"github.com/kernfsim/kernfsim/internal/setting"
)

// MaxBufSize is the largest read buffer a worker may have: 256 pages (1
// MiB with 4 KiB pages). sysfs gives at most one page per read.
var MaxBufSize = 256 * os.Getpagesize()

// checkBuffers is a *ConfigError if threads buffers of size bytes are more
// than MaxBufSize each or, together, more than half the memory available.
func checkBuffers(threads, size int) error {
	if size > MaxBufSize {
		return setting.NewError("BufSize", fmt.Sprintf("give at most %d (256 pages)", MaxBufSize), "%d bytes per read", size)
	}
	avail := meminfo.Available()
	if total := int64(threads) * int64(max(size, 8192)); avail > 0 && total > avail/2 {
		return setting.NewError("BufSize", "use fewer threads or a smaller buffer",
			"%d threads x %d-byte buffers need %d MiB, more than half the %d MiB available", threads, size, total>>20, avail>>20)
	}
	return nil
}
