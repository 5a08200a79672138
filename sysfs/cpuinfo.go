package sysfs

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"strconv"
	"strings"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// CPUInfoField is one "key : value" line of /proc/cpuinfo.
type CPUInfoField struct{ Key, Value string }

// CPUModel is what /proc/cpuinfo says about every processor alike: its
// lines in order. A per-processor field (see perCPUFields) with an empty
// value is filled in for each processor from the tree.
type CPUModel []CPUInfoField

// perCPUFields are the fields WriteCPUInfo derives from the tree's
// devices/system/cpu when the model leaves them empty.
var perCPUFields = map[string]bool{
	"processor": true, "physical id": true, "siblings": true, "core id": true, "cpu cores": true,
	"apicid": true, "initial apicid": true, "cache size": true,
}

// SynthCPUModel is the processor of synthetic trees: an Intel Ice Lake
// server (family 6, model 106 = 0x6A, as the synthetic CPUs' uevent
// modalias says). Its cache size is the tree's last-level cache.
var SynthCPUModel = CPUModel{
	{"processor", ""},
	{"vendor_id", "GenuineIntel"},
	{"cpu family", "6"},
	{"model", "106"},
	{"model name", "Intel(R) Xeon(R) CPU @ 2.30GHz (kernfsim synthetic)"},
	{"stepping", "6"},
	{"microcode", "0xd0003a5"},
	{"cpu MHz", "2300.000"},
	{"cache size", ""},
	{"physical id", ""},
	{"siblings", ""},
	{"core id", ""},
	{"cpu cores", ""},
	{"apicid", ""},
	{"initial apicid", ""},
	{"fpu", "yes"},
	{"fpu_exception", "yes"},
	{"cpuid level", "27"},
	{"wp", "yes"},
	{"flags", "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe " +
		"syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf " +
		"pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic movbe " +
		"popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault epb cat_l3 invpcid_single " +
		"ssbd mba ibrs ibpb stibp ibrs_enhanced fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid cqm rdt_a avx512f avx512dq " +
		"rdseed adx smap avx512ifma clflushopt clwb intel_pt avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves " +
		"wbnoinvd dtherm ida arat pln pts avx512vbmi umip pku ospke avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg " +
		"avx512_vpopcntdq la57 rdpid fsrm md_clear pconfig flush_l1d arch_capabilities"},
	{"bugs", "spectre_v1 spectre_v2 spec_store_bypass swapgs mmio_stale_data eibrs_pbrsb gds bhi"},
	{"bogomips", "4600.00"},
	{"clflush size", "64"},
	{"cache_alignment", "64"},
	{"address sizes", "46 bits physical, 57 bits virtual"},
	{"power management", ""},
}

// ParseCPUModel reads the first processor of a /proc/cpuinfo as a model:
// every line is kept as the host wrote it, except the per-processor
// topology fields (cache size aside), which are left to the tree.
func ParseCPUModel(r io.Reader) (CPUModel, error) {
	var m CPUModel
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" && len(m) > 0 {
			break
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := CPUInfoField{strings.TrimRight(key, " \t"), strings.TrimSpace(value)}
		if perCPUFields[f.Key] && f.Key != "cache size" {
			f.Value = ""
		}
		m = append(m, f)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(m) == 0 || m[0].Key != "processor" {
		return nil, fmt.Errorf("cpuinfo: no processor block")
	}
	return m, nil
}

// cpuTopo is one online processor as the tree describes it.
type cpuTopo struct {
	cpu, pkg, core, thread int
	siblings, cores        int    // online CPUs and distinct cores in its package
	cache                  string // its last-level cache's size, "1536K"; "" if none
	known                  bool   // its topology directory was there
}

// WriteCPUInfo writes a /proc/cpuinfo for t's online CPUs
// (devices/system/cpu/online): m's lines for each, the per-processor ones
// filled in from cpuN/topology and cpuN/cache. apicid is packed as x86
// does: package, core id, thread, each in as many bits as the largest
// needs. It reads the tree as root through its io/fs view: each path walk
// takes the read side per component, and each Show runs holding only an
// active reference.
func WriteCPUInfo(w io.Writer, t *kernfsim.Tree, m CPUModel) error {
	cpus, err := readTopology(t.FS(kernfsim.RootCred))
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	coreBits, threadBits := apicBits(cpus)
	for _, c := range cpus {
		for _, f := range m {
			writeCPUInfoLine(bw, f.Key, c.field(f, coreBits, threadBits))
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// field is f's value for c.
func (c cpuTopo) field(f CPUInfoField, coreBits, threadBits int) string {
	switch {
	case f.Value != "" || !perCPUFields[f.Key]:
		return f.Value
	case f.Key == "processor":
		return strconv.Itoa(c.cpu)
	case f.Key == "cache size" && c.cache != "":
		return strings.TrimSuffix(c.cache, "K") + " KB"
	case !c.known || f.Key == "cache size":
		return ""
	}
	v := c.pkg<<(coreBits+threadBits) | c.core<<threadBits | c.thread // apicid, initial apicid
	switch f.Key {
	case "physical id":
		v = c.pkg
	case "siblings":
		v = c.siblings
	case "core id":
		v = c.core
	case "cpu cores":
		v = c.cores
	}
	return strconv.Itoa(v)
}

// writeCPUInfoLine writes "key<TAB>: value" as the kernel does: tabs up to
// column 16, no space after the colon for an empty value.
func writeCPUInfoLine(w *bufio.Writer, key, value string) {
	w.WriteString(key)
	for col := len(key); col < 16; col = (col/8 + 1) * 8 {
		w.WriteByte('\t')
	}
	w.WriteByte(':')
	if value != "" {
		w.WriteByte(' ')
		w.WriteString(value)
	}
	w.WriteByte('\n')
}

// apicBits are the widths of the core id and thread fields of an apicid.
func apicBits(cpus []cpuTopo) (coreBits, threadBits int) {
	maxCore, maxThread := 0, 0
	for _, c := range cpus {
		maxCore, maxThread = max(maxCore, c.core), max(maxThread, c.thread)
	}
	return bits.Len(uint(maxCore)), bits.Len(uint(maxThread))
}

const cpuDir = "devices/system/cpu/"

// readTopology reads every online CPU's topology from fsys.
func readTopology(fsys fs.FS) ([]cpuTopo, error) {
	online, err := readCPUList(fsys, cpuDir+"online")
	if err != nil {
		return nil, fmt.Errorf("cpuinfo: the tree has no CPUs: %w", err)
	}
	isOnline := make(map[int]bool, len(online))
	for _, c := range online {
		isOnline[c] = true
	}
	cpus := make([]cpuTopo, len(online))
	for i, c := range online {
		cpus[i] = readCPU(fsys, c, isOnline)
	}
	countCores(cpus)
	return cpus, nil
}

// readCPU reads cpuN's topology: its package, core id, place among its
// thread siblings, online package siblings and last-level cache.
func readCPU(fsys fs.FS, cpu int, online map[int]bool) cpuTopo {
	dir := cpuDir + "cpu" + strconv.Itoa(cpu) + "/"
	c := cpuTopo{cpu: cpu}
	pkg, err1 := readInt(fsys, dir+"topology/physical_package_id")
	core, err2 := readInt(fsys, dir+"topology/core_id")
	threads, err3 := readCPUList(fsys, dir+"topology/thread_siblings_list")
	pkgCPUs, err4 := readCPUList(fsys, dir+"topology/core_siblings_list")
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return c
	}
	c.pkg, c.core, c.known = pkg, core, true
	for i, t := range threads {
		if t == cpu {
			c.thread = i
		}
	}
	for _, p := range pkgCPUs {
		if online[p] {
			c.siblings++
		}
	}
	c.cache = lastLevelCache(fsys, dir+"cache/")
	return c
}

// countCores sets each CPU's cpu cores: the distinct core ids among the
// online CPUs of its package.
func countCores(cpus []cpuTopo) {
	cores := map[int]map[int]bool{}
	for _, c := range cpus {
		if !c.known {
			continue
		}
		if cores[c.pkg] == nil {
			cores[c.pkg] = map[int]bool{}
		}
		cores[c.pkg][c.core] = true
	}
	for i := range cpus {
		cpus[i].cores = len(cores[cpus[i].pkg])
	}
}

// lastLevelCache is the size of the highest-level cache in dir
// (cpuN/cache/), or "" if there is none.
func lastLevelCache(fsys fs.FS, dir string) string {
	ents, _ := fs.ReadDir(fsys, strings.TrimSuffix(dir, "/"))
	best, size := 0, ""
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "index") {
			continue
		}
		level, err := readInt(fsys, dir+e.Name()+"/level")
		s, err2 := fs.ReadFile(fsys, dir+e.Name()+"/size")
		if err == nil && err2 == nil && level > best {
			best, size = level, strings.TrimSpace(string(s))
		}
	}
	return size
}

func readInt(fsys fs.FS, name string) (int, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func readCPUList(fsys fs.FS, name string) ([]int, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	return ParseCPUList(strings.TrimSpace(string(b)))
}

// ParseCPUList parses a kernel CPU list ("0-3,8,10-11"; "" is none).
func ParseCPUList(s string) ([]int, error) {
	var cpus []int
	if s == "" {
		return nil, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if isRange && err == nil {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || b < a {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
