package sysfs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
)

// swapPairs are the names the swapper exchanges in the mirrored directory
// (renameat2 RENAME_EXCHANGE), each a file the mirror may read and
// something it must never read through it: a symlink to a root-only
// secret file, a symlink to a root-only directory holding one, a FIFO.
var swapPairs = [][2]string{{"a", "l"}, {"d", "ld"}, {"f", "p"}}

// swapEnv names the directory TestMirrorHostSwapper swaps in.
const swapEnv = "KERNFSIM_SWAP_DIR"

// plainContents are all the attribute contents the swap directory holds.
var plainContents = []string{"plain\n", "inner\n", "beside a fifo\n"}

// makeSwapHost makes, under a fresh directory, a secret file and a
// secret directory (0600 and 0700, the test's user's; root's when run as
// root) and, beside them, the directory to mirror. It returns the
// directory and the secret.
func makeSwapHost(t *testing.T, owner int) (dir, secret string) {
	base := t.TempDir()
	for _, p := range []string{filepath.Dir(base), base} {
		require.NoError(t, os.Chmod(p, 0o755)) // the swapper may be another user
	}
	secret = fmt.Sprintf("SECRET %d %d\n", os.Getpid(), time.Now().UnixNano())
	require.NoError(t, os.WriteFile(filepath.Join(base, "secret"), []byte(secret), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(base, "secretdir"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(base, "secretdir/inner"), []byte(secret), 0o600))
	dir = filepath.Join(base, "dir")
	files := []hostFile{
		{path: "a", mode: 0o644, data: plainContents[0]},
		{path: "l", target: filepath.Join(base, "secret")},
		{path: "d", mode: 0o755, dir: true},
		{path: "d/inner", mode: 0o644, data: plainContents[1]},
		{path: "ld", target: filepath.Join(base, "secretdir")},
		{path: "f", mode: 0o644, data: plainContents[2]},
	}
	require.NoError(t, os.Mkdir(dir, 0o755))
	for _, f := range files {
		p := filepath.Join(dir, f.path)
		switch {
		case f.target != "":
			require.NoError(t, os.Symlink(f.target, p))
		case f.dir:
			require.NoError(t, os.Mkdir(p, f.mode))
		default:
			require.NoError(t, os.WriteFile(p, []byte(f.data), f.mode))
		}
	}
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "p"), 0o644))
	if owner >= 0 {
		require.NoError(t, filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			return errors.Join(err, os.Lchown(p, owner, owner))
		}))
	}
	return dir, secret
}

// TestMirrorHostSwapRace mirrors a directory again and again while
// another process, as its owner (the test's user, or nobody when run as
// root), exchanges regular files with symlinks to a secret outside it, a
// directory with a symlink to a secret directory, and a file with a FIFO.
// No mirror may hold the secret's bytes, none may be left waiting on the
// FIFO (nor open it, where /proc serves), and each report must describe
// its tree; whether a swap was caught
// in the act is chance, and not asserted. With openat2 and /proc, and
// with their fallbacks (forEachResolve).
func TestMirrorHostSwapRace(t *testing.T) {
	for _, owner := range []string{"self", "nobody"} {
		t.Run("owner="+owner, func(t *testing.T) {
			forEachResolve(t, func(t *testing.T) {
				uid := -1
				if owner == "nobody" {
					if os.Geteuid() != 0 {
						t.Skip("swapping as nobody needs root")
					}
					uid = 65534
				}
				dir, secret := makeSwapHost(t, uid)
				opens := watchOpens(t, dir, []string{"p"})
				stop := startSwapper(t, dir, uid)
				changed := mirrorWhileSwapping(t, dir, secret)
				t.Logf("%d swaps; %d mirrors saw one", stop(), changed)
				requireNoReadLeft(t)
				if n := opens(); n != 0 && procSelfFD == "/proc/self/fd/" {
					t.Errorf("the FIFO was opened %d times", n)
				}
			})
		})
	}
}

// mirrorWhileSwapping mirrors dir up to 200 times (fewer if the machine
// is slow: 10 s at most) and checks each mirror; it returns how many
// reported a change.
func mirrorWhileSwapping(t *testing.T, dir, secret string) (changed int) {
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 200 && time.Now().Before(deadline); i++ {
		tr := kernfsim.New(locking.MustNew("rwsem"), kernfsim.Options{})
		rep, err := MirrorHost(tr, dir, MirrorOptions{ReadTimeout: 250 * time.Millisecond})
		require.NoError(t, err)
		checkSwapMirror(t, tr, rep, secret)
		if t.Failed() {
			t.Fatalf("mirror %d: %s", i, rep)
		}
		if len(rep.Changed) > 0 {
			changed++
		}
	}
	return changed
}

// checkSwapMirror checks that tr holds only what the swap directory
// holds, never the secret, and that rep describes it: its counts match
// the tree, every changed attribute fails EIO and every changed
// directory is empty.
func checkSwapMirror(t *testing.T, tr *kernfsim.Tree, rep MirrorReport, secret string) {
	fsys := tr.FS(kernfsim.RootCred)
	nodes := 0
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		nodes++
		switch {
		case d.IsDir():
			if slices.Contains(rep.Changed, p) {
				entries, err := fs.ReadDir(fsys, p)
				if err != nil || len(entries) != 0 {
					t.Errorf("%s: changed, but has %d entries (%v); want it empty", p, len(entries), err)
				}
			}
		case d.Type().IsRegular():
			checkSwapAttr(t, fsys, p, rep, secret)
		}
		return nil
	})
	require.NoError(t, err)
	if got := rep.Dirs + rep.Attrs + rep.Symlinks; got != nodes {
		t.Errorf("report counts %d nodes, the tree has %d", got, nodes)
	}
	if len(rep.ReadErrors) != 0 {
		t.Errorf("read errors %v, want none", rep.ReadErrors)
	}
	for _, s := range rep.Skipped {
		if s.Reason != SkipFileType {
			t.Errorf("skipped %s: %s; only a FIFO may be skipped", s.Path, s.Reason)
		}
	}
}

// checkSwapAttr checks one attribute of a swap directory's mirror: one
// of its contents; EIO if, and only if, reported changed; ETIMEDOUT only
// if reported timed out (a loaded machine).
func checkSwapAttr(t *testing.T, fsys fs.FS, p string, rep MirrorReport, secret string) {
	data, err := fs.ReadFile(fsys, p)
	switch {
	case strings.Contains(string(data), secret):
		t.Errorf("%s: the mirror serves the secret outside the mirrored directory", p)
	case err != nil:
		e := kernfsim.Errno(err)
		if !(e == syscall.EIO && slices.Contains(rep.Changed, p)) && !(e == syscall.ETIMEDOUT && slices.Contains(rep.TimedOut, p)) {
			t.Errorf("%s: %v, not reported as changed (%q) or timed out (%q)", p, err, rep.Changed, rep.TimedOut)
		}
	case slices.Contains(rep.Changed, p):
		t.Errorf("%s: reported changed, but reads %q", p, data)
	case !slices.Contains(plainContents, string(data)):
		t.Errorf("%s: reads %q, which no file of the mirrored directory holds", p, data)
	}
}

// requireNoReadLeft fails unless every attribute read (the goroutines
// read starts, which outlive a timed-out read) has returned within 30 s:
// a read waiting to open a FIFO would never return.
func requireNoReadLeft(t *testing.T) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(30 * time.Second); ; {
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "(*mirror).read.func") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a host read is still waiting 30 s after the mirrors ended:\n%s", stacks)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not synchronising
	}
}

// startSwapper runs TestMirrorHostSwapper on dir in a child process, as
// uid (unless -1), and returns once it has swapped each pair once; the
// function returned stops it and returns how many swaps it made. The
// test's end stops it too.
func startSwapper(t *testing.T, dir string, uid int) (stop func() int) {
	cmd := exec.Command(executableFor(t, uid), "-test.run=^TestMirrorHostSwapper$", "-test.count=1")
	cmd.Env = append(os.Environ(), swapEnv+"="+dir)
	cmd.Dir = dir // one uid can enter
	cmd.Stderr = os.Stderr
	if uid >= 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	outPipe, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	out := bufio.NewScanner(outPipe)
	var once sync.Once
	swaps, waitErr := 0, error(nil)
	stop = func() int {
		once.Do(func() {
			in.Close()
			for out.Scan() {
				fmt.Sscanf(out.Text(), "swaps %d", &swaps)
			}
			waitErr = cmd.Wait()
		})
		require.NoError(t, waitErr, "the swapper failed")
		return swaps
	}
	t.Cleanup(func() { stop() })
	if !out.Scan() || out.Text() != "ready" {
		t.Fatalf("the swapper did not start: %q, %v", out.Text(), out.Err())
	}
	return stop
}

// executableFor is this test binary, copied where uid can run it
// (the go command builds it in a directory only its user can enter).
func executableFor(t *testing.T, uid int) string {
	exe, err := os.Executable()
	require.NoError(t, err)
	if uid < 0 {
		return exe
	}
	data, err := os.ReadFile(exe)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	require.NoError(t, os.Chmod(dir, 0o755))
	copied := filepath.Join(dir, "swapper")
	require.NoError(t, os.WriteFile(copied, data, 0o755))
	return copied
}

// TestMirrorHostSwapper is TestMirrorHostSwapRace's swapper, run in a
// child process: it exchanges the pairs of swapPairs in $KERNFSIM_SWAP_DIR
// until its stdin closes, says "ready" after the first round and how
// many swaps it made at the end.
func TestMirrorHostSwapper(t *testing.T) {
	dir := os.Getenv(swapEnv)
	if dir == "" {
		t.Skip("run by TestMirrorHostSwapRace")
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	swaps := 0
	for round := 0; ; round++ {
		for _, p := range swapPairs {
			require.NoError(t, unix.Renameat2(fd, p[0], fd, p[1], unix.RENAME_EXCHANGE), "exchange %s and %s", p[0], p[1])
			swaps++
		}
		if round == 0 {
			fmt.Println("ready")
		}
		select {
		case <-done:
			fmt.Printf("swaps %d\n", swaps)
			return
		default:
		}
	}
}
