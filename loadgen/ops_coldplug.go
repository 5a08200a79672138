package loadgen

import (
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/kernfsim/kernfsim/internal/setting"
	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/loadgen/targets"
)

// udev coldplug of memory blocks. On a 64 TB IBM machine with over 100,000
// devices/system/memory/memoryN directories, udevd's workers handle one
// "add" event per block at boot while firmware keeps hot-adding blocks:
// every event walks the 100,000-entry memory/ directory, reads a few of
// the block's attributes and looks up names the block lacks (sd-device
// reads the driver link of every device). The walk and the missing-name
// lookup are the two paths the kernfs mutex serialised.
//
// One OpColdplug operation is one event: read online, state, phys_index
// and valid_zones of one block and look up its driver link (ENOENT is its
// success). Iteration j of worker i handles block (i + j x Threads) mod N,
// so that the workers of the concur phase share the blocks out between
// them, each block once, as udevd's workers do. Meanwhile a writer (or
// Config.Writers of them) writes block-aligned addresses to
// devices/system/memory/probe (kernfsim's synthetic trees model
// CONFIG_ARCH_MEMORY_PROBE), each adding a block.

const (
	memDir           = "devices/system/memory"
	MemProbeFile     = memDir + "/probe"
	memBlockSizeFile = memDir + "/block_size_bytes"
	// coldplugAbsent is the name looked up in every block, which no memory
	// block has.
	coldplugAbsent = "driver"
)

// coldplugAttrs are the attributes read per block; those the first block
// lacks are left out.
var coldplugAttrs = []string{"online", "state", "phys_index", "valid_zones"}

// ColdplugFiles is the lookups of one operation: the attributes and the
// missing name.
const ColdplugFiles = 5

// setColdplug fills p with the blocks and attributes of a coldplug run.
func (p *plan) setColdplug(t target, c Config) error {
	blocks := memBlocks(t)
	if len(blocks) == 0 {
		return setting.NewError("Op", "give the tree memory blocks ({Tree.MemBlocks} N) or measure a sysfs that has them",
			"coldplug needs %s/memoryN directories, and %s has none", memDir, t.abs(""))
	}
	first := memDir + "/" + blocks[0] + "/"
	names := prefixed(first, append(slices.Clone(coldplugAttrs), coldplugAbsent))
	read, missing, err := classify(t, names, make([]byte, max(c.BufSize, 8192)))
	switch {
	case err != nil:
		return err
	case len(read) == 0 || slices.Contains(read, first+coldplugAbsent):
		return setting.NewError("Op", "measure a sysfs whose memory blocks have the usual attributes",
			"%s: want readable %s and no %s; read %q, missing %q", t.abs(first), strings.Join(coldplugAttrs, ", "),
			coldplugAbsent, read, missing)
	}
	p.MemDir, p.Blocks, p.Stride, p.Absent = t.abs(memDir), blocks, c.Threads, coldplugAbsent
	for _, r := range read {
		p.Attrs = append(p.Attrs, strings.TrimPrefix(r, first))
	}
	p.Names = append(read, first+coldplugAbsent)
	return nil
}

func prefixed(prefix string, names []string) []string {
	return mapSlice(names, func(n string) string { return prefix + n })
}

// memBlocks lists memoryN under devices/system/memory in numeric order.
func memBlocks(t target) []string {
	ents, _ := t.list(memDir)
	var blocks []string
	for _, e := range ents {
		if n, ok := strings.CutPrefix(e.name, "memory"); ok && e.dir && isNumber(n) {
			blocks = append(blocks, e.name)
		}
	}
	slices.SortFunc(blocks, func(a, b string) int { return numOf(a, "memory") - numOf(b, "memory") })
	return blocks
}

// coldplug is one OpColdplug operation: the next block's attributes and
// its missing name. It goes on past a failure and returns the first, as a
// *fs.PathError naming the file.
func (w *worker) coldplug() error {
	p := w.p
	base := p.MemDir + "/" + p.Blocks[w.cursor] + "/"
	w.cursor = (w.cursor + p.Stride) % len(p.Blocks)
	var first error
	for _, a := range p.Attrs {
		if err := w.t.readFile(base+a, w.buf); err != nil && first == nil {
			first = &fs.PathError{Op: "read", Path: base + a, Err: err}
		}
	}
	switch err := w.t.readFile(base+p.Absent, w.buf); {
	case err == nil && first == nil:
		first = &fs.PathError{Op: "lookup", Path: base + p.Absent, Err: errFound}
	case err != nil && kernfsim.Errno(err) != syscall.ENOENT && first == nil:
		first = &fs.PathError{Op: "lookup", Path: base + p.Absent, Err: err}
	}
	return first
}

// prober is OpColdplug's changer: it hot-adds memory blocks by writing
// their addresses to devices/system/memory/probe. Of n writers, writer w
// adds blocks first+w, first+w+n, first+w+2n, ...
type prober struct {
	t    target
	size uint64 // block_size_bytes; immutable
	n    int    // writers; immutable
	next []int  // per writer, the next block it adds; writer w's is its own
}

// newProber returns the writers of a coldplug run on t, or nil and a note
// saying why there are none. Only a kernfsim tree (one with the
// bus/kernfsim control files) is ever written: loadgen does not hot-add
// memory to a real machine. It adds one block at once to check that the
// probe works. Writers asked for (Config.Churn or Config.Writers) that
// cannot write are bad input.
func newProber(t target, c Config, blocks []string) (*writerSet, string, error) {
	size, why := probeable(t, c)
	if why == "" {
		next := numOf(blocks[len(blocks)-1], "memory") + 1
		why = probeOnce(t, size, next)
		if why == "" {
			p := &prober{t: t, size: size, n: c.writers(), next: make([]int, c.writers())}
			for w := range p.next {
				p.next[w] = next + 1 + w
			}
			return newWriterSet(p, p.n, c.writeRate()), "", nil
		}
	}
	if c.explicitWriters() {
		return nil, "", setting.NewError(c.writersField(), "hot-add into a kernfsim tree with a probe file ({TargetSim} or a kernfsim mount)", "%s", why)
	}
	return nil, "no memory hot-add: " + why + "; readers only", nil
}

// probeable says why t cannot hot-add memory ("" if it can), and its
// block size.
func probeable(t target, c Config) (uint64, string) {
	if _, sim := t.(*simTarget); !sim && t.stat(t.abs(churnControl)) != nil {
		return 0, t.abs("") + " is not a kernfsim tree (loadgen never hot-adds memory to a real machine)"
	}
	if c.Target.Kind != targets.TargetPath && !targets.AcceptsWriters(c.Target.Lock) {
		return 0, "lock strategy " + c.Target.Lock + " refuses writers"
	}
	if err := t.stat(t.abs(MemProbeFile)); err != nil {
		return 0, fmt.Sprintf("no %s (%v)", MemProbeFile, kernfsim.ErrnoName(kernfsim.Errno(err)))
	}
	buf := make([]byte, 64)
	n, err := readAll(t, memBlockSizeFile, buf)
	size, perr := strconv.ParseUint(strings.TrimSpace(string(buf[:n])), 16, 64)
	if err != nil || perr != nil || size == 0 {
		return 0, fmt.Sprintf("%s unreadable (%v, %q)", memBlockSizeFile, err, buf[:n])
	}
	return size, ""
}

// readAll reads the start of the attribute rel into buf (targets read at
// offset 0 only), returning how many bytes it holds.
func readAll(t target, rel string, buf []byte) (int, error) {
	clear(buf)
	if err := t.readFile(t.abs(rel), buf); err != nil {
		return 0, err
	}
	return len(strings.TrimRight(string(buf), "\x00")), nil
}

// probeOnce adds block next and checks that it appeared; "" if it did.
func probeOnce(t target, size uint64, next int) string {
	if err := t.write(MemProbeFile, probeAddr(size, next)); err != nil {
		return fmt.Sprintf("writing %s: %v", MemProbeFile, err)
	}
	if err := t.stat(t.abs(memDir + "/memory" + strconv.Itoa(next))); err != nil {
		return fmt.Sprintf("writing %s did not add memory%d (%v)", MemProbeFile, next, err)
	}
	return ""
}

func probeAddr(size uint64, block int) []byte {
	return []byte("0x" + strconv.FormatUint(size*uint64(block), 16) + "\n")
}

// change adds writer w's next block. The blocks added stay, as
// hot-added memory does.
func (p *prober) change(w int) (bool, string, error) {
	block := p.next[w]
	p.next[w] += p.n
	return false, p.t.abs(MemProbeFile), p.t.write(MemProbeFile, probeAddr(p.size, block))
}

func (p *prober) cleanup() {}
