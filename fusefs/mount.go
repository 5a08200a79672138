package fusefs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/fusectl"
	"github.com/kernfsim/kernfsim/internal/mountinfo"
	"github.com/kernfsim/kernfsim/kernfsim"
)

// MountOptions configure MountTree.
type MountOptions struct {
	Options
	AllowOther    bool // let other users in (needs user_allow_other for non-root)
	Force         bool // recover a mountpoint left stale by a killed server
	MaxBackground int  // kernel's limit of background requests; 0 means 64
	Debug         bool // log every request (go-fuse's debug output)
	// Transport is how requests reach the server, as package uring
	// serves them: Transport.Only Auto (the default) is io_uring where
	// it can be had and /dev/fuse elsewhere. MountTree sets HoldP.
	Transport uring.Config
	// Stats, if set, is the tree's stats file (kernel/kernfsim/stats):
	// MountTree binds it to the new server before the mount serves.
	Stats *StatsFile
}

// Setting is a MountOptions setting that an error names: the field, and
// the value where it matters ("Transport", "devfuse"). A command names
// it as its user sets it, a flag for kernfsim mount.
type Setting struct{ Field, Value string }

func (s Setting) String() string {
	if s.Value == "" {
		return s.Field
	}
	return s.Field + "=" + s.Value
}

// UsageError is a problem with what the user asked for (a bad mountpoint,
// no /dev/fuse): the command should say so and exit 2.
type UsageError struct {
	format string
	args   []any // a Setting among them is written by Text's name
}

func (e *UsageError) Error() string { return e.Text(Setting.String) }

// Text is the message, with each setting it names written by name.
func (e *UsageError) Text(name func(Setting) string) string {
	args := make([]any, len(e.args))
	for i, a := range e.args {
		if s, ok := a.(Setting); ok {
			a = name(s)
		}
		args[i] = a
	}
	return fmt.Sprintf(e.format, args...)
}

// usage is a *UsageError; a Setting among args is written with %s.
func usage(format string, args ...any) error {
	return &UsageError{format: format, args: args}
}

// SettingError is a setting that could not be served, though the input
// was valid: Transport=uring where the kernel refused the rings.
type SettingError struct {
	Setting Setting
	Err     error
}

func (e *SettingError) Error() string { return e.Setting.String() + ": " + e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// The settings that errors name.
var (
	settingForce          = Setting{Field: "Force"}
	settingTransportURing = Setting{Field: "Transport", Value: string(uring.URing)}
	settingTransportDev   = Setting{Field: "Transport", Value: string(uring.DevFuse)}
)

// Mount is a mounted tree.
type Mount struct {
	Server     *Server
	Mountpoint string
	srv        *uring.Server
	conn       uint32 // /sys/fs/fuse/connections/<conn>
}

// Transport is how requests reach the server: uring.DevFuse or
// uring.URing, never uring.Auto.
func (m *Mount) Transport() uring.Kind { return m.srv.Transport() }

// FellBack says why io_uring was left to choose (uring.Auto) but not
// used; nil if it was used or not left to choose. It wraps
// uring.ErrUnavailable.
func (m *Mount) FellBack() error { return m.srv.FellBack() }

// MountTree checks mountpoint, mounts tree on it and serves it in the
// background until Unmount.
func MountTree(tree *kernfsim.Tree, mountpoint string, opts MountOptions) (*Mount, error) {
	mnt, err := filepath.Abs(mountpoint)
	if err != nil {
		return nil, usage("mountpoint %q: %v", mountpoint, err)
	}
	mnt = resolve(mnt)
	if err := checkMountpoint(mnt, opts.Force); err != nil {
		return nil, err
	}
	if err := RaiseFDLimit(); err != nil {
		return nil, err
	}
	if opts.MaxBackground == 0 {
		opts.MaxBackground = 64
	}
	fs := New(tree, opts.Options)
	m := &Mount{Server: fs, Mountpoint: mnt}
	if err := m.mount(opts); err != nil {
		fs.Close()
		return nil, err
	}
	fs.setTransport(m.srv)
	if opts.Stats != nil {
		opts.Stats.bind(fs)
	}
	go m.srv.Serve()
	// WaitMount primes the mount (uring.PrimeNoPoll), before any client
	// in this process opens a file on it.
	if err := m.srv.WaitMount(); err != nil {
		m.Unmount()
		return nil, fmt.Errorf("mount %s: %w", mnt, err)
	}
	if err := m.identify(); err != nil {
		m.abort()
		return nil, err
	}
	if stacked, err := m.stacked(); err != nil || stacked {
		m.Unmount()
		if err != nil {
			return nil, err
		}
		return nil, usage("mountpoint %s is already a mount (another server mounted it at the same moment): unmount it first (umount %s) or choose another directory", mnt, mnt)
	}
	m.Server.transport.Load().primedPolls.Store(m.srv.Polls())
	return m, nil
}

// mount mounts over the transport opts asks for and sets m.srv. A queue
// that fails while serving makes the uring.Server abort the connection:
// every client then gets ENOTCONN rather than a hang.
func (m *Mount) mount(opts MountOptions) error {
	cfg := opts.Transport
	cfg.HoldP = true // kernfsim opts in: its queues keep their Ps
	srv, err := uring.NewServer(m.Server, m.Mountpoint, fuseOptions(opts), cfg)
	if err != nil {
		return transportError(m.Mountpoint, err)
	}
	m.srv = srv
	return nil
}

// transportError is uring.NewServer's err for mnt: io_uring ruled out
// where Transport.Only is uring.URing is a *UsageError naming the way out
// (uring.ErrNotOffered) or a *SettingError; anything else a refused mount.
func transportError(mnt string, err error) error {
	switch {
	case errors.Is(err, uring.ErrNotOffered):
		return usage("%s: %v; or use %s", settingTransportURing, err, settingTransportDev)
	case errors.Is(err, uring.ErrUnavailable):
		return &SettingError{Setting: settingTransportURing, Err: err}
	}
	return mountRefused(mnt, err)
}

func fuseOptions(o MountOptions) *fuse.MountOptions {
	mo := &fuse.MountOptions{
		FsName: "kernfsim", Name: "kernfsim", MaxWrite: maxWrite,
		DirectMount: true, DisableXAttrs: true, DisableReadDirPlus: true,
		MaxBackground: o.MaxBackground, AllowOther: o.AllowOther, Debug: o.Debug,
	}
	if o.Permissions == PermKernel {
		mo.Options = append(mo.Options, "default_permissions")
	}
	return mo
}

// maxWrite is the largest WRITE (and, as max_read, READ) the kernel sends:
// go-fuse's default, given explicitly because it also sizes each io_uring
// entry's payload (uring.Server.PinnedBytes).
const maxWrite = 128 << 10

// Done is closed when the server has stopped serving.
func (m *Mount) Done() <-chan struct{} { return m.srv.Done() }

// Unmount runs the tree's Barrier first, so every queued teardown
// completes and tells the kernel while the mount still serves, then
// unmounts and waits until the server has stopped. If the mount is busy
// (open files, a process's cwd, a mount inside it) it aborts the
// connection and detaches the mount (see endBusy), so it returns promptly
// even under load: clients then get ENOTCONN or ECONNABORTED.
//
// Other mounts of its connection (bind mounts) would keep it serving
// after the unmount: it aborts the connection and names them (endBound).
//
// It unmounts only its own mount. One that another mount covers (mounted
// on top of it since) is left in place: its connection is aborted, so the
// server stops, and the dead mount stays beneath the other one until that
// is unmounted; the error says so.
func (m *Mount) Unmount() error {
	m.Server.tree.Barrier()
	defer m.Server.Close()
	if top, present, cover := m.onTop(); !top {
		return m.endCovered(present, cover)
	}
	var abortErr error
	aborted := false
	err := unix.Unmount(m.Mountpoint, 0)
	switch {
	case err == nil:
		if binds := m.otherMounts(); len(binds) > 0 {
			return m.endBound(binds)
		}
	case errors.Is(err, syscall.EPERM):
		// mounted through fusermount3 by a user: let it unmount
		if err := m.srv.Unmount(); err != nil {
			abortErr = m.detachAsUser(err)
		}
	default:
		abortErr = m.endBusy()
		aborted = abortErr == nil
	}
	if m.srv.WaitEnded(2 * time.Second) {
		return nil
	}
	switch {
	case abortErr != nil:
		return fmt.Errorf("unmount %s: %v; the server did not stop within 2 s, and the connection ends when this process exits", m.Mountpoint, abortErr)
	case aborted:
		return fmt.Errorf("unmount %s: the connection was aborted, but the server did not stop within 2 s", m.Mountpoint)
	}
	return m.endUnexplained()
}

// mountRefused is a mount the kernel or fusermount3 refused, as a
// *UsageError naming the way out: mount(2) needs CAP_SYS_ADMIN, and a
// user's mount goes through fusermount3, which must be setuid root.
func mountRefused(mnt string, err error) error {
	way := "this process may not mount: run as root with CAP_SYS_ADMIN (in a container: --cap-add SYS_ADMIN --device /dev/fuse, or --privileged)"
	if os.Geteuid() != 0 {
		way = "run as root, or make sure fusermount3 is setuid root (ls -l $(command -v fusermount3)) and " +
			"that this user owns " + mnt + " (fusermount3's own message, if any, says why)"
	}
	return usage("mount %s: the FUSE mount was refused (%s): %s", mnt, strings.TrimSpace(err.Error()), way)
}

// checkMountpoint is CheckMountpoint; a test replaces it to play a second
// server whose check passed just before the first one mounted.
var checkMountpoint = CheckMountpoint

// CheckMountpoint says what is wrong with mnt as a mountpoint, as a
// *UsageError: missing, not a directory, not empty, already mounted, or a
// FUSE mount whose server is dead or does not answer (recovered with
// force). It also checks that FUSE can be mounted at all: /dev/fuse, and
// fusermount3 for non-root users.
//
// Every look at a FUSE mount is bounded by probeWait: a stopped or hung
// server never answers, and a look from this thread would wait forever.
// A FUSE mount is probed with statfs, which the kernel never answers from
// its caches (a stat of the root could be answered from a cached
// attribute long after the server died).
func CheckMountpoint(mnt string, force bool) error {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return usage("no /dev/fuse (%v): load the fuse module (modprobe fuse) or give the container the device", err)
	}
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			return usage("not root, and fusermount3, which mounts FUSE for users, is not installed: run as root, or install the Debian package fuse3")
		}
	}
	if table, err := mountinfo.Self(); err == nil {
		if top, ok := mountinfo.Top(table, mnt); ok {
			return checkMounted(mnt, top, force)
		}
	}
	var fi os.FileInfo
	hung, err := bounded(func() (err error) { fi, err = os.Stat(mnt); return err })
	switch {
	case hung:
		return usage("mountpoint %s lies in a FUSE mount whose server does not answer (stat waited %v): stop or unmount that mount first", mnt, probeWait)
	case kernfsim.Disconnected(err):
		return usage("mountpoint %s lies in a dead FUSE mount (its server was killed): unmount that mount first (umount -l)", mnt)
	case errors.Is(err, os.ErrNotExist):
		return usage("mountpoint %s does not exist: create it with mkdir -p %s", mnt, mnt)
	case err != nil:
		return usage("mountpoint %s: %v", mnt, err)
	case !fi.IsDir():
		return usage("mountpoint %s is not a directory", mnt)
	}
	entries, err := os.ReadDir(mnt)
	if err != nil {
		return usage("mountpoint %s: %v", mnt, err)
	}
	if len(entries) > 0 {
		return usage("mountpoint %s is not empty (%d entries, e.g. %s): mount on an empty directory", mnt, len(entries), entries[0].Name())
	}
	return nil
}

// checkMounted says what to do with mnt, where top is mounted: a live
// mount is refused; a FUSE mount whose server is dead, or does not answer
// within probeWait, is refused too, or with force detached (a hung one's
// connection aborted first, so that its clients return), and mnt checked
// again.
func checkMounted(mnt string, top mountinfo.Entry, force bool) error {
	live := usage("mountpoint %s is already a mount: unmount it first (umount %s) or choose another directory", mnt, mnt)
	if !top.FUSE() {
		return live
	}
	hung, err := probeFUSE(mnt)
	var errno syscall.Errno
	switch {
	case err != nil && !errors.As(err, &errno):
		return usage("mountpoint %s is a FUSE mount, and whether its server answers cannot be told (%v): unmount it first (umount -l %s) or choose another directory", mnt, err, mnt)
	case !hung && !kernfsim.Disconnected(err):
		return live
	case !force && hung:
		return usage("mountpoint %s is a FUSE mount whose server does not answer (statfs waited %v; stopped or hung): add %s to abort its connection and recover it, or run umount -f %s", mnt, probeWait, settingForce, mnt)
	case !force:
		return usage("mountpoint %s is a dead FUSE mount (transport endpoint is not connected, its server was killed): add %s to recover it, or run umount -l %s", mnt, settingForce, mnt)
	}
	if hung {
		if err := fusectl.Abort(top.Minor); err != nil {
			return usage("mountpoint %s is a FUSE mount whose server does not answer, and %s could not abort its connection: %v", mnt, settingForce, err)
		}
	}
	if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
		return usage("mountpoint %s is a dead FUSE mount and %s could not detach it: %v", mnt, settingForce, err)
	}
	return CheckMountpoint(mnt, false)
}

// resolve follows the symlinks in mnt, so that a live mount reached
// through one is recognised. A mountpoint in the mount table is left as
// it is: resolving it would stat the mount's root, which a stopped FUSE
// server never answers (see probeFUSE). The parent is resolved within
// probeWait, and left as it is if that does not answer.
func resolve(mnt string) string {
	var dir string
	if hung, err := bounded(func() (err error) { dir, err = filepath.EvalSymlinks(filepath.Dir(mnt)); return err }); hung || err != nil {
		return mnt
	}
	mnt = filepath.Join(dir, filepath.Base(mnt))
	if table, err := mountinfo.Self(); err != nil {
		return mnt
	} else if _, mounted := mountinfo.Top(table, mnt); mounted {
		return mnt
	}
	var real string
	if hung, err := bounded(func() (err error) { real, err = filepath.EvalSymlinks(mnt); return err }); !hung && err == nil {
		return real
	}
	return mnt
}

// probeWait bounds each look at a mount that may not answer.
const probeWait = 2 * time.Second

// bounded runs f on a goroutine of its own and returns its error, or
// hung if it has not returned within probeWait; f is then left to
// return when the kernel lets it (a request the server has not read ends
// when this process exits).
func bounded(f func() error) (hung bool, err error) {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return false, err
	case <-time.After(probeWait):
		return true, nil
	}
}
