package sysfs

import (
	"strconv"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// kernelDir is kernel/.
func (s *synth) kernelDir() dir {
	return dir{
		{"fscaps", roSrc(srcOne)},
		{"kexec_loaded", roSrc(srcZero)},
		{"mm", dir{{"transparent_hugepage", dir{
			{"defrag", rw(newChoice(3, "always", "defer", "defer+madvise", "madvise", "never"))},
			{"enabled", rw(newChoice(1, "always", "madvise", "never"))},
			{"use_zero_page", rwVal("1")},
		}}}},
		{"profiling", rwVal("0")},
		{"rcu_expedited", rwVal("0")},
		{"rcu_normal", rwVal("0")},
		{"uevent_helper", rwVal("")},
		{"uevent_seqnum", roSrc(kernfsim.NewFunc(func() string { return strconv.FormatUint(s.seqnum.Load(), 10) + "\n" }))},
	}
}

// moduleDir is module/: loadable modules have an initstate, built-in ones
// only parameters.
func (s *synth) moduleDir() dir {
	return dir{
		{"ixgbe", module(true, ent{"allow_unsupported_sfp", param(0o444, "N")})},
		{"nvme", module(true, ent{"io_queue_depth", param(0o644, "1024")}, ent{"poll_queues", param(0o644, "0")})},
		{"nvme_core", module(true, ent{"io_timeout", param(0o644, "30")}, ent{"max_retries", param(0o644, "5")})},
		{"printk", module(false, ent{"console_suspend", param(0o644, "N")}, ent{"time", param(0o644, "Y")})},
		{"rcupdate", module(false, ent{"rcu_cpu_stall_timeout", param(0o644, "21")},
			ent{"rcu_expedited", param(0o444, "0")}, ent{"rcu_normal", param(0o444, "0")})},
		{"rcutree", module(false, ent{"blimit", param(0o444, "1000")}, ent{"jiffies_till_first_fqs", param(0o644, "3")})},
	}
}

func module(loadable bool, params ...ent) dir {
	d := dir{{"parameters", dir(params)}}
	if loadable {
		d = append(d, ent{"initstate", ro("live")}, ent{"refcnt", roSrc(srcZero)}, ent{"uevent", wo()})
	}
	return d
}
