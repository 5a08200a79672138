package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kernfsim/kernfsim/loadgen/errtally"
)

// The worker-process protocol. The parent starts Config.WorkerCommand
// with the spec on its standard input and the read end of the start pipe
// as file descriptor 3. The worker sets up, writes "ready\n" on its
// standard output, waits until the parent closes the start pipe (every
// worker sees the end of file at once: the start barrier), runs, and
// writes its report as one JSON line. SIGTERM or SIGINT stop it early; it
// still reports.

// workerSpec is what a worker process runs.
type workerSpec struct {
	Index   int    `json:"index"`
	CPU     int    `json:"cpu"`
	Times   int    `json:"times"`
	BufSize int    `json:"bufsize"`
	Dir     string `json:"dir"`
	Plan    plan   `json:"plan"`
	// MinDurationNs is the least duration of the loop, from when the
	// worker sees the start barrier (Config.MinDuration); 0: none.
	MinDurationNs int64 `json:"min_duration_ns,omitempty"`
}

// workerReport is what a worker process sends back.
type workerReport struct {
	Result WorkerResult          `json:"result"`
	Hist   []byte                `json:"hist,omitempty"` // HdrHistogram V2 compressed
	Errors []errtally.ErrorCount `json:"errors,omitempty"`
	Err    string                `json:"err,omitempty"`
	// EndMono is when the loop ended, CLOCK_MONOTONIC ns (monoNow).
	EndMono int64 `json:"end_mono_ns,omitempty"`
}

const readyLine = "ready\n"

// ServeWorker is the worker side of the protocol: the hidden command
// behind Config.WorkerCommand calls it with its standard input and output
// and file descriptor 3. Cancel ctx on SIGTERM and SIGINT.
func ServeWorker(ctx context.Context, in io.Reader, out io.Writer, start io.Reader) error {
	var spec workerSpec
	if err := json.NewDecoder(in).Decode(&spec); err != nil {
		return fmt.Errorf("reading the worker spec: %w", err)
	}
	t, err := newPathTarget(spec.Dir)
	if err != nil {
		return writeReport(out, workerReport{Err: err.Error()})
	}
	w := newWorker(spec.Index, spec.CPU, spec.Times, spec.BufSize, t, &spec.Plan)
	unlock, err := lockThread(spec.CPU)
	if err != nil {
		return writeReport(out, workerReport{Err: fmt.Sprintf("pinning to CPU %d: %v", spec.CPU, err)})
	}
	defer unlock()
	if _, err := io.WriteString(out, readyLine); err != nil {
		return err
	}
	started := make(chan struct{})
	go func() { io.Copy(io.Discard, start); close(started) }()
	select {
	case <-started:
	case <-ctx.Done():
		return ctx.Err()
	}
	if spec.MinDurationNs > 0 {
		w.until = monoNow() + spec.MinDurationNs
	}
	stop := new(atomic.Bool)
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	w.loop(stop)
	return writeReport(out, w.report())
}

func (w *worker) report() workerReport {
	h, err := w.hist.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	r := workerReport{Result: w.res, Hist: h, Errors: w.errs.Sorted(), EndMono: w.endMono}
	if err != nil {
		r.Err = err.Error()
	}
	return r
}

func writeReport(out io.Writer, r workerReport) error {
	return json.NewEncoder(out).Encode(r)
}

// child is one worker process as the parent sees it.
type child struct {
	cmd    *exec.Cmd
	stdout *bufio.Reader
	stderr bytes.Buffer
}

// procs runs n workers as processes.
func (e *env) procs(ctx context.Context, ph phaseSpec) ([]outcome, time.Duration, error) {
	n := ph.n
	r, w, err := os.Pipe()
	if err != nil {
		return nil, 0, err
	}
	defer w.Close()
	kids, err := e.startChildren(ph, r)
	r.Close()
	if err != nil {
		return nil, 0, err
	}
	ready, results := make(chan error, n), make(chan outcome, n)
	for i, k := range kids {
		go k.converse(i, ready, results)
	}
	stopAll := func() {
		for _, k := range kids {
			k.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	if err := awaitReady(ctx, ready, n); err != nil {
		stopAll()
		collect(context.Background(), results, n, func() {}, func() {})
		return nil, 0, err
	}
	t0 := time.Now()
	e.barrier = monoNow()
	w.Close()
	outs := collect(ctx, results, n, stopAll, func() { e.report(ph, t0, 0) })
	return outs, time.Since(t0), nil
}

// startChildren starts the phase's worker processes, each with its spec
// written to its standard input and start as its file descriptor 3.
func (e *env) startChildren(ph phaseSpec, start *os.File) ([]*child, error) {
	kids := make([]*child, 0, ph.n)
	for i := range ph.n {
		spec, err := json.Marshal(workerSpec{Index: i, CPU: e.cpuOf(ph, i), Times: ph.times, MinDurationNs: ph.minDur.Nanoseconds(),
			BufSize: e.cfg.BufSize, Dir: e.target.Dir, Plan: *e.p})
		if err != nil {
			return nil, err
		}
		k := &child{cmd: exec.Command(e.cfg.WorkerCommand[0], e.cfg.WorkerCommand[1:]...)}
		k.cmd.Stdin = bytes.NewReader(append(spec, '\n'))
		k.cmd.Stderr = &k.stderr
		k.cmd.ExtraFiles = []*os.File{start}
		// Own process group: a terminal's Ctrl-C reaches the parent only,
		// which stops the workers itself so that each still reports.
		k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		out, err := k.cmd.StdoutPipe()
		if err == nil {
			err = k.cmd.Start()
		}
		if err != nil {
			for _, k := range kids {
				k.cmd.Process.Kill()
				k.cmd.Wait()
			}
			return nil, fmt.Errorf("starting worker process %d: %w", i, err)
		}
		k.stdout = bufio.NewReader(out)
		kids = append(kids, k)
	}
	return kids, nil
}

// converse reads the child's ready line, then its report, and waits for
// it to exit. A child that fails before it is ready is waited for first,
// so that the error carries its stderr.
func (k *child) converse(i int, ready chan<- error, results chan<- outcome) {
	line, err := k.stdout.ReadString('\n')
	if err == nil && line != readyLine {
		var r workerReport
		if json.Unmarshal([]byte(line), &r) == nil && r.Err != "" {
			err = errors.New(r.Err)
		} else {
			err = fmt.Errorf("unexpected output %q", line)
		}
	}
	if err != nil {
		err = k.failed(i, err)
		ready <- err
		results <- outcome{err: err}
		return
	}
	ready <- nil
	o := k.readReport()
	if o.err != nil {
		o.err = k.failed(i, o.err)
	} else {
		io.Copy(io.Discard, k.stdout)
		k.cmd.Wait()
	}
	results <- o
}

// failed waits for the child and describes its failure with its exit
// status and stderr.
func (k *child) failed(i int, err error) error {
	io.Copy(io.Discard, k.stdout)
	werr := k.cmd.Wait()
	return fmt.Errorf("worker process %d: %w (%v): %s", i, err, werr, bytes.TrimSpace(k.stderr.Bytes()))
}

func (k *child) readReport() outcome {
	var r workerReport
	if err := json.NewDecoder(k.stdout).Decode(&r); err != nil {
		return outcome{err: fmt.Errorf("reading its report: %w", err)}
	}
	if r.Err != "" {
		return outcome{err: errors.New(r.Err)}
	}
	h, err := hdrhistogram.Decode(r.Hist)
	if err != nil {
		return outcome{err: fmt.Errorf("decoding its histogram: %w", err)}
	}
	errs := errtally.ErrorTally{}
	for _, c := range r.Errors {
		errs.Add(c.Errno, c.Churn, c.Path, c.Count)
	}
	return outcome{res: r.Result, hist: h, errs: errs, endMono: r.EndMono}
}

// awaitReady waits until n workers are ready; the first failure, or ctx
// ending, is returned.
func awaitReady(ctx context.Context, ready <-chan error, n int) error {
	for range n {
		select {
		case err := <-ready:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
