// Package mountcmd is `kernfsim mount`: it serves a tree over FUSE until a signal.
//
// It builds the tree from the tree flags, serves it in the foreground
// until SIGINT or SIGTERM, then unmounts.
// cmd/kernfsim adds it as a subcommand; loadgen runs it (Main) in a child
// process when it starts its own server.
package mountcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kernfsim/kernfsim/client"
	"github.com/kernfsim/kernfsim/fusefs"
	"github.com/kernfsim/kernfsim/fusefs/uring"
	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/internal/guardian"
	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// flags are mount's own flags, besides the tree flags.
type flags struct {
	tree        cli.TreeFlags
	entry, attr time.Duration
	negative    time.Duration
	negativeSet bool // --negative-timeout was given: it overrides the lock's rule
	perms       string
	transport   string
	deferTW     bool
	force       bool
	allowOther  bool
	debug       bool
	pprof       string
	pprofAny    bool
}

// New returns the mount command.
func New() *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:   "mount MOUNTPOINT [flags]",
		Short: "Serve the tree over FUSE on MOUNTPOINT until SIGINT or SIGTERM",
		Long: `Serve the tree over FUSE on MOUNTPOINT in the foreground. It prints one
line once the mount serves; SIGINT or SIGTERM unmounts it and exits 0.

With timeouts of 0 (the default) every path component reaches the server
as a LOOKUP, so the lock strategy is exercised on every walk. Missing
names follow the lock: under one that caches negatives (kernfs from 5.15)
the kernel keeps a missing name until its directory changes; under mutex
(kernfs before 5.15) every lookup of one reaches the server. The status
line says which rule holds (negatives=lock:cached, lock:uncached, or
override when --negative-timeout is given). With anything cached, every
tree change is pushed to the kernel, so nothing stale is served.`,
		Example: `  kernfsim mount /mnt/k --lock=rwsem
  kernfsim mount /mnt/k --lock rcu --cpus 448 --sockets 4 --mem-blocks 100000
  kernfsim mount /mnt/k --negative-timeout 30s --permissions server
  kernfsim mount /mnt/k --force          # recover a mountpoint left by a killed server
  echo "dev0 4" > /mnt/k/bus/kernfsim/new_device`,
		Args: cli.MountpointArg("kernfsim mount /mnt/k (mkdir -p /mnt/k first)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.negativeSet = cmd.Flags().Changed("negative-timeout")
			return serve(cmd.Context(), args[0], &f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cli.AddTreeFlags(cmd.Flags(), &f.tree)
	fl := cmd.Flags()
	fl.DurationVar(&f.entry, "entry-timeout", 0, "how long the kernel may cache a directory entry")
	fl.DurationVar(&f.attr, "attr-timeout", 0, "how long the kernel may cache attributes")
	fl.DurationVar(&f.negative, "negative-timeout", 0, "override the lock's rule for missing names: how long the kernel may cache one (0: never). Without it a lock that caches negatives ("+
		strings.Join(locking.NamesWhere(func(t locking.Traits) bool { return t.CachesNegatives }), ", ")+
		") has the kernel keep a missing name until its directory changes, and one that does not (mutex, as kernfs before 5.15) never")
	fl.StringVar(&f.perms, "permissions", "server", "who checks permissions: server (in LOOKUP, ACCESS and OPEN, under the tree's lock, as kernfs does in its walk), or kernel (mounting with default_permissions: a GETATTR per directory walked)")
	fl.StringVar(&f.transport, "transport", "auto", "how requests reach the server: auto (io_uring where the kernel offers it), devfuse, or uring (per-CPU FUSE-over-io_uring queues, Linux 6.14+)")
	fl.BoolVar(&f.deferTW, "uring-defer-taskrun", false, "over io_uring, set the rings up with IORING_SETUP_DEFER_TASKRUN: requests reach a queue thread in its own wait instead of by task work and a signal (a few percent less per request with one client per CPU, more with several; see docs/performance.md)")
	fl.BoolVar(&f.force, "force", false, "recover a mountpoint left stale by a killed server")
	fl.BoolVar(&f.allowOther, "allow-other", false, "let users other than the mounter in")
	fl.BoolVar(&f.debug, "debug", false, "log every FUSE request")
	fl.StringVar(&f.pprof, "pprof", "", "serve net/http/pprof on this loopback address (e.g. 127.0.0.1:6060)")
	fl.BoolVar(&f.pprofAny, "pprof-any", false, "allow --pprof on a non-loopback address")
	return cmd
}

// Main runs `kernfsim mount` with args (MOUNTPOINT and flags) and returns
// its exit status; ctx's cancellation stands for SIGINT/SIGTERM.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := New()
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cli.UsageError{Err: err} })
	c, err := cmd.ExecuteContextC(ctx)
	return cli.Report("kernfsim mount", c, err, stderr)
}

func (f *flags) options() (fusefs.MountOptions, error) {
	var o fusefs.MountOptions
	for name, d := range map[string]time.Duration{"--entry-timeout": f.entry, "--attr-timeout": f.attr, "--negative-timeout": f.negative} {
		if d < 0 {
			return o, fmt.Errorf("invalid value %v for %s: must be 0 or more", d, name)
		}
	}
	if f.perms != string(fusefs.PermKernel) && f.perms != string(fusefs.PermServer) {
		return o, fmt.Errorf("invalid value %q for --permissions: valid values are kernel, server", f.perms)
	}
	t, err := uring.ParseKind(f.transport)
	if err != nil {
		return o, fmt.Errorf("invalid value %q for --transport: valid values are auto, devfuse, uring", f.transport)
	}
	if f.deferTW && t == uring.DevFuse {
		return o, errors.New("--uring-defer-taskrun does not apply to --transport devfuse: it sets up io_uring rings; drop one of them")
	}
	o.Transport = uring.Config{Only: t, DeferTaskRun: f.deferTW}
	o.Options = fusefs.Options{EntryTimeout: f.entry, AttrTimeout: f.attr, Permissions: fusefs.Permissions(f.perms)}
	if f.negativeSet {
		o.Options.NegativeTimeout = &f.negative
	}
	o.Force, o.AllowOther, o.Debug = f.force, f.allowOther, f.debug
	return o, nil
}

// settingFlags names the flag behind each fusefs.MountOptions field that
// fusefs's errors name.
var settingFlags = setting.Table{"Force": "--force", "Transport": "--transport"}

// flagOf is the flag that sets s, with its value: "--transport devfuse".
func flagOf(s fusefs.Setting) string {
	f, ok := settingFlags[s.Field]
	if !ok {
		return s.String()
	}
	if s.Value != "" {
		f += " " + s.Value
	}
	return f
}

// mountError is MountTree's err in the command's terms: the settings it
// names as flags, a *cli.UsageError for bad input and a
// *cli.RuntimeError for the rest.
func mountError(err error) error {
	var (
		ue *fusefs.UsageError
		se *fusefs.SettingError
	)
	switch {
	case errors.As(err, &ue):
		return &cli.UsageError{Err: errors.New(ue.Text(flagOf))}
	case errors.As(err, &se):
		return &cli.RuntimeError{Err: fmt.Errorf("%s: %w", flagOf(se.Setting), se.Err)}
	}
	return &cli.RuntimeError{Err: err}
}

// serve mounts, prints the status line, and waits for ctx or the server's
// end.
func serve(ctx context.Context, mountpoint string, f *flags, stdout, stderr io.Writer) error {
	opts, err := f.options()
	if err != nil {
		return &cli.UsageError{Err: err}
	}
	stopPprof, err := startPprof(f.pprof, f.pprofAny, stderr)
	if err != nil {
		return err
	}
	defer stopPprof()
	if err := checkAddressSpace(opts.Transport.Only, f.tree.TreeBytes()); err != nil {
		return err
	}
	var stats *fusefs.StatsFile
	built, err := f.tree.Build(func(t *kernfsim.Tree) kernfsim.Source { stats = fusefs.NewStatsFile(t); return stats })
	if err != nil {
		return err
	}
	if built.Report != "" {
		fmt.Fprintln(stderr, "kernfsim: "+built.Report)
	}
	opts.Stats = stats
	if err := checkAddressSpace(opts.Transport.Only, 0); err != nil {
		return err
	}
	m, err := fusefs.MountTree(built.Tree, mountpoint, opts)
	if err != nil {
		return mountError(err)
	}
	defer guardian.Guard(m.Mountpoint, m.Conn(), stderr)() // ends the connection if this process is killed while the kernel holds one of its threads
	if why := m.FellBack(); why != nil {
		fmt.Fprintf(stderr, "%s%v\n", client.FallbackNotice, why)
	}
	neg := m.Server.Negatives()
	fmt.Fprintln(stdout, client.Status{Tree: f.tree.Describe(), Mountpoint: m.Mountpoint, Lock: f.tree.LockDetail(),
		EntryTimeout: f.entry, AttrTimeout: f.attr, NegativeTimeout: neg.Timeout, Negatives: fmt.Sprint(neg),
		Permissions: f.perms, Transport: m.Transport().String()})
	select {
	case <-ctx.Done():
	case <-m.Done():
		return &cli.RuntimeError{Err: fmt.Errorf("%s was unmounted from outside; the server stopped", m.Mountpoint)}
	}
	barrier(built.Tree, stderr)
	if subs, _ := m.Submounts(); len(subs) > 0 {
		fmt.Fprintf(stderr, "kernfsim: %d mounts inside %s go with it (detached, as umount -l would): %s\n", len(subs), m.Mountpoint, strings.Join(subs, " "))
	}
	if err := m.Unmount(); err != nil {
		return &cli.RuntimeError{Err: err}
	}
	if td := built.Tree.Teardowns(); td.Queued > 0 {
		fmt.Fprintf(stderr, "kernfsim: unmounted after all %d deferred teardowns completed (%d teardowns in all)\n", td.Queued, td.Completed)
	}
	return nil
}

// barrier waits until every queued teardown has completed. A further
// SIGINT or SIGTERM meanwhile is answered with what it is waiting for.
func barrier(t *kernfsim.Tree, stderr io.Writer) {
	done := make(chan struct{})
	go func() { t.Barrier(); close(done) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	for {
		select {
		case <-done:
			return
		case <-sig:
			var pending uint64
			if g := t.Strategy().Grace(); g != nil {
				pending = g.Stats().Pending
			}
			fmt.Fprintf(stderr, "kernfsim: waiting for %d queued teardowns to complete (each after a grace period) before unmounting; SIGKILL abandons them\n", pending)
		}
	}
}

// startPprof serves net/http/pprof on addr with mutex and block profiling
// on. A non-loopback address is refused unless any is set.
func startPprof(addr string, any bool, stderr io.Writer) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &cli.UsageError{Err: fmt.Errorf("invalid value %q for --pprof: want HOST:PORT (%v)", addr, err)}
	}
	if ip := net.ParseIP(host); !any && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, &cli.UsageError{Err: fmt.Errorf("--pprof %s is not a loopback address: use 127.0.0.1:PORT, or add --pprof-any to expose profiles to the network", addr)}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &cli.UsageError{Err: fmt.Errorf("--pprof: %v", err)}
	}
	runtime.SetMutexProfileFraction(5)
	runtime.SetBlockProfileRate(10000)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	fmt.Fprintf(stderr, "kernfsim: pprof on http://%s/debug/pprof/ (mutex and block profiling on)\n", ln.Addr())
	return func() { srv.Close() }, nil
}
