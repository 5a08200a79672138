package loadgen

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"
)

func TestWarnings(t *testing.T) {
	ok := fixture()
	if w := ok.Warnings(); len(w) != 0 {
		t.Errorf("a sound run warns: %q", w)
	}
	fast := fixture() // efficiency 0.9 -> 1.5: concur faster than perfect scaling
	fast.Concur.Wall = fast.Concur.Wall * 9 / 15
	if w := fast.Warnings(); len(w) != 1 || !strings.Contains(w[0], "efficiency 1.50 is above 1.05") {
		t.Errorf("efficiency %.2f: warnings %q", fast.Efficiency(), w)
	}
	short := fixture() // 4 threads on 2 CPUs, each loop 1 ms
	short.Threads = 4
	short.Concur.Workers = append(short.Concur.Workers, short.Concur.Workers...)
	for i := range short.Concur.Workers {
		short.Concur.Workers[i].Total = time.Millisecond
	}
	short.Concur.Wall = 200 * time.Millisecond
	if w := short.Warnings(); len(w) != 1 || !strings.Contains(w[0], "a worker's loop took 1.00ms, under 20.0ms") {
		t.Errorf("1 ms loops, 4 threads on 2 CPUs: warnings %q", w)
	}
	short.Threads = 2 // as many threads as CPUs: no time slices shared
	if w := short.Warnings(); len(w) != 0 {
		t.Errorf("1 ms loops, 2 threads on 2 CPUs: warnings %q", w)
	}
}

func TestSpreadAndUnresolved(t *testing.T) {
	r := compareFixture()
	c := r.Cell(1, "files", 1) // sim rcu: 150, 225, 300 ns against mutex's 100, 150, 200
	if sp := c.Spread(); sp.Min != 150 || sp.Median != 225 || sp.Max != 300 || sp.CI {
		t.Errorf("spread %+v, want 150/225/300 without a CI (3 runs)", sp)
	}
	if !r.Unresolved(*c) {
		t.Error("ranges 100-200 and 150-300 overlap: want unresolved")
	}
	for i := range c.Runs { // 750-1500 ns: clear of mutex's
		c.Runs[i].PerOp *= 5
	}
	if r.Unresolved(*c) {
		t.Error("ranges 100-200 and 750-1500 are apart: want resolved")
	}
	if m := r.Cell(0, "files", 1); r.Unresolved(*m) {
		t.Error("the mutex row is never unresolved against itself")
	}
	for range 4 { // 7 runs: benchmath gives a 95% confidence interval
		c.Runs = append(c.Runs, c.Runs[0])
	}
	if sp := c.Spread(); !sp.CI || sp.Lo > sp.Median || sp.Hi < sp.Median || sp.Lo < sp.Min || sp.Hi > sp.Max {
		t.Errorf("7 runs: spread %+v, want a CI around the median within min-max", sp)
	}
}

// Plain and compare bench output parse as Go benchmark results with the
// same metrics, the -N suffix and the header's configuration.
func TestBenchReadable(t *testing.T) {
	var plain, cmp bytes.Buffer
	if err := WriteBench(&plain, fixture()); err != nil {
		t.Fatal(err)
	}
	if err := WriteCompareBench(&cmp, compareFixture()); err != nil {
		t.Fatal(err)
	}
	pu, pn := readBench(t, plain.String())
	cu, cn := readBench(t, cmp.String())
	if !slices.Equal(pu, cu) {
		t.Errorf("plain units %q, compare units %q: want the same", pu, cu)
	}
	if pn != 1 || cn != 3*2*2*3 {
		t.Errorf("%d plain, %d compare results; want 1 and 36", pn, cn)
	}
}

func readBench(t *testing.T, s string) (units []string, n int) {
	t.Helper()
	r := benchfmt.NewReader(strings.NewReader(s), "x")
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			t.Fatalf("not a result: %v", r.Result())
		}
		if cpu := res.GetConfig("cpu"); cpu != testProvenance.CPUModel || res.GetConfig("pkg") != benchPkg {
			t.Errorf("config cpu %q, pkg %q", cpu, res.GetConfig("pkg"))
		}
		if _, parts := res.Name.Parts(); len(parts) == 0 || string(parts[len(parts)-1]) != "-2" {
			t.Errorf("name %q lacks the -2 GOMAXPROCS suffix", res.Name)
		}
		units = units[:0]
		for _, v := range res.Values {
			units = append(units, v.Unit)
		}
		n++
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return units, n
}

func TestParseMount(t *testing.T) {
	line := "kernfsim: serving synthetic tree of 8 CPUs on /tmp/m: lock=rcu gp=deferred tick=4ms entry-timeout=1s attr-timeout=0s negative-timeout=30s permissions=server"
	m := parseMount(line)
	want := Mount{Lock: "rcu gp=deferred tick=4ms", Transport: DefaultTransport, Permissions: "server",
		EntryTimeout: time.Second, NegativeTimeout: 30 * time.Second}
	if m == nil || *m != want {
		t.Fatalf("got %+v, want %+v", m, want)
	}
	if m := parseMount(line + " transport=uring"); m == nil || m.Transport != "uring" {
		t.Errorf("transport=uring: got %+v", m)
	}
	if m := parseMount("kernfsim: mirror of /sys: 12 files left out"); m != nil {
		t.Errorf("not a status line: got %+v", m)
	}
	tgt := Target{Kind: TargetKernfsim, Lock: "rcu", Mount: m}
	if got := tgt.Describe(); got != "kernfsim lock=rcu gp=deferred tick=4ms transport=devfuse permissions=server entry-timeout=1s attr-timeout=0s negative-timeout=30s" {
		t.Errorf("Describe: %q", got)
	}
	for _, tc := range []struct {
		t    Target
		want string
	}{{Target{Kind: TargetSim, Lock: "mutex"}, "sim lock=mutex transport=none permissions=walker sim=bare"},
		{Target{Kind: TargetSim, Lock: "rwsem", SimCost: 5 * time.Microsecond}, "sim lock=rwsem transport=none permissions=walker sim-cost=5µs shared"},
		{Target{Kind: TargetPath, Dir: "/sys"}, "sys transport=none"}} {
		if got := tc.t.Describe(); got != tc.want {
			t.Errorf("Describe: got %q, want %q", got, tc.want)
		}
	}
}

// TestParseMountNegatives: where the lock decides how missing names are
// cached, a row's header says its own rule and the rows' shared setup
// says only that the lock decides.
func TestParseMountNegatives(t *testing.T) {
	line := "kernfsim: serving synthetic tree of 8 CPUs on /tmp/m: lock=mutex entry-timeout=0s attr-timeout=0s negative-timeout=0s negatives=lock:uncached permissions=server transport=uring"
	m := parseMount(line)
	if m == nil || m.Negatives != "lock:uncached" || !m.NegativesFromLock() {
		t.Fatalf("got %+v, want negatives lock:uncached", m)
	}
	tgt := Target{Kind: TargetKernfsim, Lock: "mutex", Mount: m}
	if got, want := tgt.Describe(), "kernfsim lock=mutex transport=uring permissions=server entry-timeout=0s attr-timeout=0s negative-timeout=0s negatives=lock:uncached"; got != want {
		t.Errorf("Describe: got %q, want %q", got, want)
	}
	if got, want := tgt.Setup(), "transport=uring permissions=server entry-timeout=0s attr-timeout=0s negatives=lock"; got != want {
		t.Errorf("Setup: got %q, want %q", got, want)
	}
	m = parseMount(strings.Replace(line, "negative-timeout=0s negatives=lock:uncached", "negative-timeout=30s negatives=override", 1))
	if m == nil || m.NegativesFromLock() || m.NegativeTimeout != 30*time.Second {
		t.Fatalf("override: got %+v", m)
	}
	tgt.Mount = m
	if got, want := tgt.Setup(), "transport=uring permissions=server entry-timeout=0s attr-timeout=0s negative-timeout=30s negatives=override"; got != want {
		t.Errorf("Setup: got %q, want %q", got, want)
	}
}

func TestProvenance(t *testing.T) {
	p := CaptureProvenance([]string{"loadgen", "--sim", "it's"})
	if p.Kernel == "" || p.OnlineCPUs < 1 || p.GOMAXPROCS < 1 || p.Version == "" || p.GoVersion == "" || p.CPUModel == "" {
		t.Errorf("incomplete: %+v", p)
	}
	if got, want := p.CommandLine(), `loadgen --sim 'it'\''s'`; got != want {
		t.Errorf("command line %s, want %s", got, want)
	}
}

// A comparison written as JSON reads back into the same tables and plot.
func TestReadCompareJSON(t *testing.T) {
	orig := compareFixture()
	orig.Rows[0].Target.Mount = &Mount{Lock: "mutex", Transport: "devfuse", Permissions: "kernel"}
	orig.Rows[0].Target.Kind = TargetKernfsim
	orig.Cells = makeCells(orig)
	for i := range orig.Cells {
		orig.Cells[i].Runs = compareFixture().Cells[i].Runs
	}
	var j, table1, table2 bytes.Buffer
	if err := WriteCompareJSON(&j, orig); err != nil {
		t.Fatal(err)
	}
	back, err := ReadCompareJSON(&j)
	if err != nil {
		t.Fatal(err)
	}
	WriteCompareTable(&table1, orig)
	WriteCompareTable(&table2, back)
	if table1.String() != table2.String() {
		t.Errorf("table differs after a round trip:\n%s\nwant:\n%s", table2.String(), table1.String())
	}
	var w, wtable1, wtable2 bytes.Buffer
	WriteCompareJSON(&w, compareWritersFixture())
	wback, err := ReadCompareJSON(&w)
	WriteCompareTable(&wtable1, compareWritersFixture())
	WriteCompareTable(&wtable2, wback)
	if err != nil || wtable1.String() != wtable2.String() {
		t.Errorf("with writers: %v; the table differs after a round trip:\n%s\nwant:\n%s", err, wtable2.String(), wtable1.String())
	}
	for _, format := range PlotFormats {
		var p bytes.Buffer
		if err := WriteComparePlot(&p, back, format); err != nil || p.Len() < 1000 {
			t.Errorf("%s: %v, %d bytes", format, err, p.Len())
		}
	}
	var run bytes.Buffer
	WriteJSON(&run, fixture())
	if _, err := ReadCompareJSON(&run); err == nil || !strings.Contains(err.Error(), "a single run") {
		t.Errorf("a run's JSON: %v", err)
	}
}

func TestPlotFormat(t *testing.T) {
	for path, want := range map[string]string{"a.svg": "svg", "b.PNG": "png", "c/d.pdf": "pdf", "e.jpg": "", "f": ""} {
		if got, ok := PlotFormat(path); got != want || ok != (want != "") {
			t.Errorf("%s: got %q %v, want %q", path, got, ok, want)
		}
	}
}

// The compare table lists each kind of warning once, with the cells it
// came in and in how many of their runs.
func TestCompareWarningsSummary(t *testing.T) {
	r := compareFixture()
	r.SinglePinned = true // else efficiency at one thread is explained by the unpinned single worker
	c := &r.Cells[0]
	c.Runs[0].Warnings = []string{"efficiency 1.50 is above 1.05, ...: ...", "a worker's loop took 1ms, ...: ..."}
	c.Runs[2].Warnings = []string{"efficiency 1.20 is above 1.05, ...: ..."}
	var b bytes.Buffer
	if err := WriteCompareTable(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  efficiency above 1.05 (raise --repeats; --times, or --sim-times for the sim rows): sim mutex files threads=1 (2/3)\n",
		"  worker loops under 20.0ms (raise --times, or --sim-times for the sim rows): sim mutex files threads=1 (1/3)\n",
	} {
		if !strings.Contains(b.String(), want) || strings.Count(b.String(), "sim mutex files threads=1 (") != 2 || !strings.Contains(b.String(), "e0.67!") {
			t.Errorf("want a line %q and a flagged cell:\n%s", want, b.String())
		}
	}
}

// The sys rows' plain ops run SysTimes (default 10 x Times): /sys is fast
// enough that Times would end each worker's loop within a tick.
func TestSysTimes(t *testing.T) {
	cc := CompareConfig{Times: 500}.withDefaults()
	sys := Row{Target: Target{Kind: TargetPath, Dir: "/sys"}}
	for _, tc := range []struct {
		row  Row
		op   string
		want int
	}{{sys, "files", 5000}, {sys, "missing", 5000}, {sys, "hwloc", cc.HwlocTimes}, {sys, "coldplug", 100},
		{Row{Target: Target{Kind: TargetKernfsim}}, "files", 500}, {Row{Target: Target{Kind: TargetSim}}, "files", 10000}} {
		if got := cc.times(&Cell{Row: tc.row, Op: tc.op}); got != tc.want {
			t.Errorf("%s %s: %d ops per worker, want %d", tc.row.Label(), tc.op, got, tc.want)
		}
	}
	r := compareFixture()
	r.SysTimes = 20000
	var b bytes.Buffer
	WriteCompareTable(&b, r)
	if !strings.Contains(b.String(), "(sim: 20000, sys: 20000)") {
		t.Errorf("header lacks the sys rows' ops:\n%.200s", b.String())
	}
}
