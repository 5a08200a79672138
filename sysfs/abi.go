package sysfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/kernfsim"
)

// MaxDeviceAttrs is the most extra attributes new_device creates.
const MaxDeviceAttrs = 64

// ABI is the in-tree control interface, like a real sysfs bus:
//
//	bus/kernfsim/new_device     (0200) write "NAME [NATTRS]" to create a device
//	bus/kernfsim/delete_device  (0200) write "NAME [NAME...]" to remove devices (one grace period)
//	devices/kernfsim/NAME/      uevent, value (0644), counter (changes on every read), attrN
//	class/kernfsim/NAME         -> ../../devices/kernfsim/NAME
//	kernel/kernfsim/stats       (0444) live counters, from the stats source given
//	bus/kernfsim/new_cgroup     (0200) write "PATH" to make a cgroup under fs/cgroup (mkdir)
//	bus/kernfsim/delete_cgroup  (0200) write "PATH" to remove one (rmdir)
//
// Bad input gets EINVAL, an existing name EEXIST, an unknown name ENODEV,
// and nothing changes on error. The cgroup files are there only where the
// tree has a cgroup v2 hierarchy (SynthConfig.Cgroups); they answer as
// mkdir and rmdir would (cgroup_abi.go).
type ABI struct {
	t       *kernfsim.Tree
	devices *kernfsim.Node // devices/kernfsim; immutable
	class   *kernfsim.Node // class/kernfsim; immutable
	max     int            // immutable: most devices at once
	cg      *cgroupABI     // immutable: nil without a cgroup hierarchy
}

// DefaultMaxDevices is how many devices new_device makes at most, unless
// ABIOptions says otherwise; past it new_device fails with ENOSPC.
const DefaultMaxDevices = 100_000

// ABIOptions configure the in-tree ABI.
type ABIOptions struct {
	Stats      kernfsim.Source // contents of kernel/kernfsim/stats; nil: no stats file
	MaxDevices int             // 0 means DefaultMaxDevices
}

// AddABI adds the control files and directories to t. stats, if not nil,
// is the contents of kernel/kernfsim/stats.
func AddABI(t *kernfsim.Tree, stats kernfsim.Source) (*ABI, error) {
	return AddABIWith(t, ABIOptions{Stats: stats})
}

// AddABIWith is AddABI with options. A tree that already holds an entry
// where the ABI adds its own (a host mirror with a file named bus, or with
// a kernfsim ABI of its own) is an *ABIConflictError, and t is unchanged.
func AddABIWith(t *kernfsim.Tree, opts ABIOptions) (*ABI, error) {
	files := []string{"bus/kernfsim/new_device", "bus/kernfsim/delete_device"}
	cgRoot, h := cgroupHierarchyOf(t)
	if h != nil {
		files = append(files, client.NewCgroupPath, client.DeleteCgroupPath)
	}
	if opts.Stats != nil {
		files = append(files, "kernel/kernfsim/stats")
	}
	if err := checkABI(t, []string{"devices/kernfsim", "class/kernfsim"}, files); err != nil {
		return nil, err
	}
	a := &ABI{t: t, max: opts.MaxDevices}
	if a.max <= 0 {
		a.max = DefaultMaxDevices
	}
	bus, err := mkdirAll(t, "bus/kernfsim")
	if err == nil {
		a.devices, err = mkdirAll(t, "devices/kernfsim")
	}
	if err == nil {
		a.class, err = mkdirAll(t, "class/kernfsim")
	}
	if err != nil {
		return nil, err
	}
	srcs := map[string]kernfsim.Source{"new_device": &newDevice{a}, "delete_device": &deleteDevice{a}}
	if h != nil {
		a.cg = &cgroupABI{t: t, root: cgRoot, h: h, max: a.max}
		srcs["new_cgroup"], srcs["delete_cgroup"] = newCgroupFile{a.cg}, deleteCgroupFile{a.cg}
	}
	for name, src := range srcs {
		if _, err := t.AddAttr(bus, name, 0o200, src); err != nil {
			return nil, err
		}
	}
	if opts.Stats != nil {
		kernel, err := mkdirAll(t, "kernel/kernfsim")
		if err != nil {
			return nil, err
		}
		if _, err := t.AddAttr(kernel, "stats", 0o444, opts.Stats); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// ABIConflictError is an entry of the tree where AddABI adds its own:
// Path (below the root) is a Kind where For, a path of the ABI, needs a
// directory on its way or nothing at all.
type ABIConflictError struct {
	Path string        // e.g. "bus" or "kernel/kernfsim/stats"
	Kind kernfsim.Kind // what is there
	For  string        // the ABI's path, e.g. "bus/kernfsim/new_device"
}

func (e *ABIConflictError) Error() string {
	what := map[kernfsim.Kind]string{kernfsim.KindDir: "a directory", kernfsim.KindAttr: "a file", kernfsim.KindSymlink: "a symlink"}[e.Kind]
	if e.Path == e.For {
		return fmt.Sprintf("%s already exists (%s), and the in-tree ABI adds its own", e.Path, what)
	}
	return fmt.Sprintf("%s is %s, where the in-tree ABI needs a directory for %s", e.Path, what, e.For)
}

// checkABI is an *ABIConflictError for the first of dirs and files t
// cannot take: a name on the way that is not a directory, or a file that
// exists already.
func checkABI(t *kernfsim.Tree, dirs, files []string) error {
	for _, p := range append(dirs, files...) {
		parts := strings.Split(p, "/")
		d := t.Root()
		for i, name := range parts {
			n, err := t.Lookup(d, name)
			if err != nil {
				break // missing: AddABI makes it
			}
			if n.Kind() != kernfsim.KindDir || i == len(parts)-1 && slices.Contains(files, p) {
				return &ABIConflictError{Path: strings.Join(parts[:i+1], "/"), Kind: n.Kind(), For: p}
			}
			d = n
		}
	}
	return nil
}

// mkdirAll is the directory at path below t's root, made where missing.
func mkdirAll(t *kernfsim.Tree, path string) (*kernfsim.Node, error) {
	d := t.Root()
	for _, name := range strings.Split(path, "/") {
		n, err := t.Lookup(d, name)
		if err != nil {
			n, err = t.Mkdir(d, name, 0o755)
		}
		if err != nil {
			return nil, err
		}
		d = n
	}
	return d, nil
}

// parseDeviceName checks one device name the way ValidateName does.
func parseDeviceName(s string) (string, syscall.Errno) {
	if e := kernfsim.ValidateName(s); e != 0 {
		return "", syscall.EINVAL
	}
	return s, 0
}

// parseNewDevice parses a write to new_device (client.NewDevice's
// format) and checks the name.
func parseNewDevice(data []byte) (name string, nattrs int, e syscall.Errno) {
	name, nattrs, err := client.ParseNewDevice(data, MaxDeviceAttrs)
	if err != nil {
		return "", 0, syscall.EINVAL
	}
	if name, e = parseDeviceName(name); e != 0 {
		return "", 0, e
	}
	return name, nattrs, 0
}

// Create makes device name with nattrs extra attributes: its directory,
// attributes and class symlink appear together, under one write-side
// acquisition. It fails with ENOSPC past the device limit and EEXIST for
// a name taken (also by a device whose delete_device has not returned),
// and then changes nothing.
func (a *ABI) Create(name string, nattrs int) error {
	var reads atomic.Uint64
	attrs := []kernfsim.BatchEntry{
		{Name: "uevent", Spec: kernfsim.NodeSpec{Kind: kernfsim.KindAttr, Mode: 0o644, Source: kernfsim.Static("DEVNAME=" + name + "\n")}},
		{Name: "value", Spec: kernfsim.NodeSpec{Kind: kernfsim.KindAttr, Mode: 0o644, Source: kernfsim.NewValue("0\n")}},
		{Name: "counter", Spec: kernfsim.NodeSpec{Kind: kernfsim.KindAttr, Mode: 0o444, Source: kernfsim.NewFunc(func() string { return strconv.FormatUint(reads.Add(1), 10) + "\n" })}},
	}
	for i := range nattrs {
		attrs = append(attrs, kernfsim.BatchEntry{Name: "attr" + strconv.Itoa(i), Spec: kernfsim.NodeSpec{Kind: kernfsim.KindAttr, Mode: 0o444, Source: kernfsim.Static(strconv.Itoa(i) + "\n")}})
	}
	_, err := a.t.AddGroup([]kernfsim.Placement{
		{Parent: a.devices, Name: name, Spec: kernfsim.NodeSpec{Kind: kernfsim.KindDir, Mode: 0o755}, Children: attrs, MaxSubdirs: a.max},
		{Parent: a.class, Name: name, Spec: kernfsim.NodeSpec{Kind: kernfsim.KindSymlink, Target: "../../devices/kernfsim/" + name}},
	})
	if errors.Is(err, syscall.ENOSPC) {
		return &fs.PathError{Op: "new_device", Path: name, Err: syscall.ENOSPC}
	}
	return err
}

// Delete removes the named devices and their class symlinks, looked up
// and deactivated under one write-side acquisition and sharing one grace
// period under rcu (like kern_unmount_array). All names must exist
// (ENODEV) and differ (EINVAL); otherwise nothing is removed. ctx is the
// Store's, so deleting from a store handler does not wait for itself.
func (a *ABI) Delete(ctx context.Context, names ...string) error {
	refs := make([]kernfsim.ChildRef, 0, 2*len(names))
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if seen[name] {
			return &fs.PathError{Op: "delete_device", Path: name, Err: syscall.EINVAL}
		}
		seen[name] = true
		refs = append(refs, kernfsim.ChildRef{Parent: a.devices, Name: name}, kernfsim.ChildRef{Parent: a.class, Name: name, Optional: true})
	}
	err := a.t.RemoveNamed(ctx, refs...)
	var pe *fs.PathError
	if errors.As(err, &pe) && errors.Is(err, syscall.ENOENT) {
		return &fs.PathError{Op: "delete_device", Path: pe.Path, Err: syscall.ENODEV}
	}
	return err
}

// newDevice is bus/kernfsim/new_device.
type newDevice struct{ a *ABI }

func (n *newDevice) Show(context.Context, *bytes.Buffer) error { return syscall.EACCES }

func (n *newDevice) Store(_ context.Context, data []byte) error {
	name, nattrs, e := parseNewDevice(data)
	if e != 0 {
		return e
	}
	return n.a.Create(name, nattrs)
}

// deleteDevice is bus/kernfsim/delete_device.
type deleteDevice struct{ a *ABI }

func (d *deleteDevice) Show(context.Context, *bytes.Buffer) error { return syscall.EACCES }

// Store takes one or more names separated by blanks; they share one grace
// period.
func (d *deleteDevice) Store(ctx context.Context, data []byte) error {
	fields, err := client.ParseDeleteDevices(data)
	if err != nil {
		return syscall.EINVAL
	}
	for _, f := range fields {
		if _, e := parseDeviceName(f); e != 0 {
			return e
		}
	}
	return d.a.Delete(ctx, fields...)
}
