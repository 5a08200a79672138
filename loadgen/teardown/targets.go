package teardown

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/targets"
	"github.com/kernfsim/kernfsim/loadgen/workload"
	"github.com/kernfsim/kernfsim/sysfs"
)

// treeCounts are a target's counters at one moment.
type treeCounts struct {
	lock    string
	pending uint64 // grace.callbacks_pending: deferred teardowns not yet run
	Counts
}

func (a treeCounts) minus(b treeCounts) Counts {
	return Counts{Queued: a.Queued - b.Queued, Completed: a.Completed - b.Completed,
		GracePeriods: a.GracePeriods - b.GracePeriods, Expedited: a.Expedited - b.Expedited}
}

// target is where a storm creates, removes and reads devices. Its
// methods are safe for concurrent use (readers read during the storm).
type target interface {
	create(name string, attrs int) error
	remove(names []string) error
	read(name string, buf []byte) error
	counters() (treeCounts, error)
	// awaitComplete returns once want more teardowns than base have
	// completed.
	awaitComplete(ctx context.Context, base treeCounts, want uint64, timeout time.Duration) error
	dir() string
	close() error
}

func openTarget(ctx context.Context, cfg Config, sp spec) (target, error) {
	switch cfg.Target.Kind {
	case targets.TargetSim:
		return newSimTarget(cfg, sp)
	case targets.TargetPath:
		return newMountTarget(cfg.Target.Dir, nil)
	}
	sc := *cfg.Server
	sc.Lock, sc.Args = sp.lock, slices.Clone(sc.Args)
	if targets.GracePeriods(sp.lock) {
		sc.Args = append(sc.Args, client.GraceArgs(sp.gp, cfg.Grace)...)
	}
	srv, err := serverproc.StartServer(ctx, sc)
	if err != nil {
		return nil, err
	}
	t, err := newMountTarget(srv.Mountpoint(), srv)
	if err != nil {
		return nil, errors.Join(err, srv.Close())
	}
	return t, nil
}

// simTarget is a tree in process, built as `kernfsim mount` builds one (the
// synthetic sysfs plus the ABI), under the spec's lock and policy.
type simTarget struct {
	t    *kernfsim.Tree
	abi  *sysfs.ABI
	w    *kernfsim.Walker
	cred kernfsim.Cred
}

func newSimTarget(cfg Config, sp spec) (*simTarget, error) {
	gp := kernfsim.GPNormal
	if sp.gp != GPNotApplicable {
		gp = kernfsim.GPPolicy(sp.gp)
	}
	a, err := sysfs.Assemble(sysfs.Options{Lock: sp.lock, Grace: cfg.Grace, GP: gp, Synth: cfg.Target.Tree.WithDefaults(),
		ABI: true, MaxDevices: max(cfg.Count, sysfs.DefaultMaxDevices)})
	if err != nil {
		return nil, targets.NewAssembleError(err)
	}
	return &simTarget{t: a.Tree, abi: a.ABI, w: kernfsim.NewWalker(a.Tree, kernfsim.WalkerOptions{}), cred: targets.DefaultSimCred}, nil
}

func (s *simTarget) create(name string, attrs int) error { return s.abi.Create(name, attrs) }

func (s *simTarget) remove(names []string) error {
	return s.abi.Delete(context.Background(), names...)
}

func (s *simTarget) read(name string, buf []byte) error {
	_, err := s.w.ReadFile(s.cred, client.DevicesDir+"/"+name+"/"+readAttr, buf)
	return err
}

func (s *simTarget) counters() (treeCounts, error) {
	td, g := s.t.Teardowns(), s.t.Strategy().Stats().Grace
	return treeCounts{lock: s.t.Strategy().Name(), Counts: Counts{Queued: td.Queued,
		Completed: td.Completed, GracePeriods: g.GracePeriods, Expedited: g.Expedited}}, nil
}

// awaitComplete is the tree's barrier: it returns when every queued
// teardown has run.
func (s *simTarget) awaitComplete(context.Context, treeCounts, uint64, time.Duration) error {
	s.t.Barrier()
	return nil
}

func (s *simTarget) dir() string { return "" }

func (s *simTarget) close() error {
	s.t.Barrier()
	return nil
}

// mountTarget is a kernfsim mount: new_device and delete_device stay open for
// the whole storm, one write(2) per call.
type mountTarget struct {
	d        *workload.Dir
	srv      *serverproc.Server // nil for a mount loadgen did not start
	add, del int                // file descriptors of new_device and delete_device
}

func newMountTarget(dir string, srv *serverproc.Server) (*mountTarget, error) {
	d, err := workload.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	m := &mountTarget{d: d, srv: srv, add: -1, del: -1}
	for _, f := range []struct {
		fd  *int
		rel string
	}{{&m.add, client.NewDevicePath}, {&m.del, client.DeleteDevicePath}} {
		path := d.Path(f.rel)
		if err := workload.RetryEINTR(func() (err error) { *f.fd, err = unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0); return }); err != nil {
			m.closeFiles()
			return nil, setting.NewError("Dir", "give a kernfsim mount (kernfsim mount DIR)", "%s: %v: not a kernfsim mount", path, err)
		}
	}
	if err := m.removeLeftovers(); err != nil {
		m.closeFiles()
		return nil, err
	}
	return m, nil
}

// removeLeftovers deletes devices an earlier storm left on the mount and
// waits until their teardowns have run, so that they do not count in the
// storm's.
func (m *mountTarget) removeLeftovers() (err error) {
	names, err := m.d.Names(client.DevicesDir)
	if err != nil {
		return err
	}
	var batch []string
	removed := false
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := m.remove(batch)
		batch, removed = batch[:0], true
		return err
	}
	defer func() {
		if removed && err == nil {
			err = m.awaitIdle(time.Minute)
		}
	}()
	for _, name := range names {
		if _, err := strconv.Atoi(strings.TrimPrefix(name, devicePrefix)); err != nil || !strings.HasPrefix(name, devicePrefix) {
			continue
		}
		if batch = append(batch, name); len(batch) == 100 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// awaitIdle waits until no deferred teardown is pending.
func (m *mountTarget) awaitIdle(timeout time.Duration) error {
	for end := time.Now().Add(timeout); ; time.Sleep(pollEvery) {
		c, err := m.counters()
		switch {
		case err != nil:
			return err
		case c.pending == 0:
			return nil
		case time.Now().After(end):
			return fmt.Errorf("%d deferred teardowns still pending after %v", c.pending, timeout)
		}
	}
}

func (m *mountTarget) write(fd int, data []byte) error {
	return workload.RetryEINTR(func() error { _, err := unix.Write(fd, data); return err })
}

func (m *mountTarget) create(name string, attrs int) error {
	if err := m.write(m.add, client.NewDeviceLine(name, attrs)); err != nil {
		return fmt.Errorf("new_device %s: %w", name, err)
	}
	return nil
}

func (m *mountTarget) remove(names []string) error {
	if err := m.write(m.del, client.DeleteDevicesLine(names...)); err != nil {
		return fmt.Errorf("delete_device %s: %w", names[0], err)
	}
	return nil
}

func (m *mountTarget) read(name string, buf []byte) error {
	return m.d.ReadFile(m.d.Path(client.DevicesDir+"/"+name+"/"+readAttr), buf)
}

// counters reads and parses kernel/kernfsim/stats.
func (m *mountTarget) counters() (treeCounts, error) {
	s, err := client.ReadStats(m.d.Path(""))
	if err != nil {
		return treeCounts{}, err
	}
	c := treeCounts{lock: s.Lock, pending: s.CallbacksPending}
	c.Queued, c.Completed, c.GracePeriods, c.Expedited = s.TeardownsQueued, s.TeardownsCompleted, s.GracePeriods, s.Expedited
	return c, nil
}

// awaitComplete polls the stats file every pollEvery.
func (m *mountTarget) awaitComplete(ctx context.Context, base treeCounts, want uint64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := m.counters()
		switch {
		case err != nil:
			return err
		case c.Completed-base.Completed >= want:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%d of %d teardowns completed %v after the storm (see %s)",
				c.Completed-base.Completed, want, timeout, m.d.Path(statsFile))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

func (m *mountTarget) dir() string { return m.d.Path("") }

func (m *mountTarget) closeFiles() {
	for _, fd := range []int{m.add, m.del} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	m.add, m.del = -1, -1
}

// close closes the control files and stops a server loadgen started; on
// a mount it did not start, it removes what the storm left.
func (m *mountTarget) close() error {
	var err error
	if m.srv == nil && m.del >= 0 {
		err = m.removeLeftovers()
	}
	m.closeFiles()
	if m.srv != nil {
		err = errors.Join(err, m.srv.Close())
	}
	return err
}
