package soak

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/errtally"
	"github.com/kernfsim/kernfsim/loadgen/serverproc"
	"github.com/kernfsim/kernfsim/loadgen/workload"
)

// server is the kernfsim server a mode soaks: one Soak started, or
// the one behind Config.Dir.
type server struct {
	srv      *serverproc.Server // nil for Config.Dir
	t        *workload.Dir
	pid      int
	lockName string // from the stats file
}

func openServer(ctx context.Context, c Config, lock string) (p *server, err error) {
	p = &server{pid: c.ServerPID}
	dir := c.Dir
	if dir == "" {
		sc := *c.Server
		sc.Lock = lock
		if p.srv, err = serverproc.StartServer(ctx, sc); err != nil {
			return nil, err
		}
		dir, p.pid = p.srv.Mountpoint(), p.srv.Pid()
	}
	p.t, err = workload.OpenDir(dir)
	if err == nil {
		p.lockName, err = p.lock()
	}
	if err != nil {
		return nil, errors.Join(err, p.close())
	}
	return p, nil
}

func (p *server) close() error {
	if p.srv == nil {
		return nil
	}
	return p.srv.Close()
}

// stats reads the mount's kernel/kernfsim/stats.
func (p *server) stats() (client.Stats, error) { return client.ReadStats(p.t.Path("")) }

// lock is the mount's lock strategy, from its stats file.
func (p *server) lock() (string, error) {
	s, err := p.stats()
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, client.ErrNotStats) || err == nil && !s.Served {
		return "", setting.NewError("Dir", "soak a kernfsim mount", "%s is not a kernfsim mount: no server.lock and server.nodeids in kernel/kernfsim/stats", p.t.Path(""))
	}
	if err != nil {
		return "", p.gone(err, nil)
	}
	return s.Lock, nil
}

// level reads the server's counters and its process's RSS and threads.
func (p *server) level() (ServerLevel, error) {
	s, err := p.stats()
	if err != nil {
		return ServerLevel{}, err
	}
	lv, err := p.process()
	lv.Goroutines, lv.Nodeids, lv.OpenFiles = int64(s.Goroutines), int64(s.Nodeids), int64(s.OpenFiles)
	return lv, err
}

// process reads the server process's RSS and threads (/proc/PID/status).
func (p *server) process() (ServerLevel, error) {
	var lv ServerLevel
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/status")
	if err != nil {
		return lv, fmt.Errorf("the server's process %d: %w", p.pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		if f := strings.Fields(v); len(f) > 0 && (k == "VmRSS" || k == "Threads") {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			if k == "VmRSS" {
				lv.RSS = n << 10 // kB
			} else {
				lv.Threads = n
			}
		}
	}
	return lv, nil
}

// Settling lasts at least settleMin, and at most settleMax while
// RSS still falls.
const (
	settleMin = 2 * time.Second
	settleMax = 15 * time.Second
)

// settle reads the server's level from one thread, back to back, until
// RSS has not fallen for settleMin/2 (at least settleMin, at most
// settleMax), and returns the last reading with the median RSS and
// the fewest goroutines of the final settleMin/2. Under load, go-fuse's
// readers set off bursts of goroutines (each completed read spawns a
// reader while none is registered, and those still waiting for reqMu are
// not counted), whose stacks keep RSS up until the server next collects
// garbage and scavenges; one client at a time sets off no burst, and the
// garbage of its reads makes the server collect. What remains is the
// server's own, comparable between two settles (scripts/measure/rss.sh).
func (p *server) settle(ctx context.Context) (ServerLevel, error) {
	type reading struct {
		at time.Duration
		lv ServerLevel
	}
	var rs []reading
	low, lowAt := int64(math.MaxInt64), time.Duration(0)
	t0 := time.Now()
	for d := time.Duration(0); d < settleMin || d-lowAt < settleMin/2 && d < settleMax; d = time.Since(t0) {
		if err := ctx.Err(); err != nil {
			return ServerLevel{}, err
		}
		l, err := p.level()
		if err != nil {
			return ServerLevel{}, p.gone(err, nil)
		}
		rs = append(rs, reading{d, l})
		if l.RSS < low-low/100 { // fell by more than 1%
			low, lowAt = l.RSS, d
		}
	}
	last := rs[len(rs)-1]
	var rss []int64
	gs := last.lv.Goroutines
	for _, r := range rs {
		if r.at >= last.at-settleMin/2 {
			rss, gs = append(rss, r.lv.RSS), min(gs, r.lv.Goroutines)
		}
	}
	slices.Sort(rss)
	lv := last.lv
	lv.RSS, lv.Goroutines = rss[len(rss)/2], gs
	return lv, nil
}

// dropCaches is where forget asks the kernel to drop dentries and inodes.
const dropCaches = "/proc/sys/vm/drop_caches"

// forget drops the kernel's dentry and inode caches, so that it FORGETs
// every nodeid it holds, and returns the nodeid table's size once it
// equals want or, with want < 0, once it holds still for 300 ms; after
// 10 s, the size then.
func (p *server) forget(ctx context.Context, want int64) (int64, error) {
	var n, prev int64 = -1, -1
	for deadline, still := time.Now().Add(10*time.Second), 0; time.Now().Before(deadline); {
		if err := os.WriteFile(dropCaches, []byte("2\n"), 0); err != nil {
			return 0, fmt.Errorf("the nodeid-table check needs the kernel to forget (run as root): %w", err)
		}
		for range 3 {
			if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
				return n, err
			}
			lv, err := p.level()
			if err != nil {
				return n, p.gone(err, nil)
			}
			prev, n = n, lv.Nodeids
			if n == prev {
				still++
			} else {
				still = 0
			}
			if n == want || (want < 0 && still >= 3) {
				return n, nil
			}
		}
	}
	return n, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// gone explains err from the mount or the server's process: a server
// Soak started that died, or a mount whose server went away (with the
// way to recover it); tally has the failures so far.
func (p *server) gone(err error, tally errtally.ErrorTally) error {
	dead := kernfsim.Disconnected(err) || !p.alive()
	switch {
	case p.srv != nil && (dead || p.srv.Exited()):
		status := "its mount stopped answering"
		if exit, ok := p.srv.ExitStatus(2 * time.Second); ok {
			status = fmt.Sprint(exit)
		}
		return fmt.Errorf("the kernfsim server died during the soak (%s): %s", status, p.srv.Output())
	case p.srv == nil && dead:
		return serverproc.NewServerGoneError(p.t.Path(""), tally)
	}
	return err
}

func (p *server) alive() bool { return p.pid <= 0 || syscall.Kill(p.pid, 0) == nil }
