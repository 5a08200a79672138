//go:build !cgo

package mountcmd

// cgoThreads says that threads are started by cgo (pthread_create), with
// glibc's stacks and malloc arenas.
const cgoThreads = false
