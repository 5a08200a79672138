// Package sysfs is what a kernfsim tree serves: the contents of a sysfs.
// It builds them on the tree's public API only; the tree core (package
// kernfsim) knows nothing of CPUs, memory blocks or devices.
//
//   - The synthetic machine (SynthConfig, BuildSynthetic, NewSynthetic):
//     a declarative layout, one file per subsystem (cpu, memory, node,
//     pci, net, block, bus and class, module), sharing the topology and
//     attribute helpers, with writable attributes that behave (cpu
//     online, memory probe and state, block scheduler).
//   - The host mirror (MirrorHost): a copy of a real /sys, contents read
//     once, with a report of what could not be mirrored.
//   - Saved machines (LoadArchive, archive.go and archive_tree.go): a tar
//     of a /sys (hwloc-gather-topology's archive), plain or compressed,
//     served without unpacking, node for node as the host mirror of the
//     archive unpacked; an archive that could not be a sysfs is refused
//     with an *ArchiveError.
//   - cpuinfo (WriteCPUInfo): a /proc/cpuinfo consistent with a tree.
//   - The cgroup v2 hierarchy of a Kubernetes node under fs/cgroup
//     (SynthConfig.Cgroups, cgroup.go): kubepods slices, pods and
//     containers, their stat files in the kernel's formats.
//   - The in-tree ABI (AddABI): bus/kernfsim/new_device and
//     delete_device, devices/kernfsim, class/kernfsim and the stats file;
//     where the tree has a cgroup hierarchy, new_cgroup and delete_cgroup
//     too (cgroup_abi.go).
//   - Assemble: the tree every command and loadgen target serves, built
//     one way from one set of options.
//
// Concurrency: attribute state (cpu online bits, memory block state,
// choices, the cgroup serial number) is accessed atomically; structural
// changes (new_device, memory probe, new_cgroup) go through the tree's
// writers, under the tree's write side. The package's one lock is the
// cgroup ABI's cgroup_mutex, taken outside the tree's locks (outer to
// inner):
//
//	cgroupABI.mu: serialises new_cgroup's creations and
//	delete_cgroup's checks, as the kernel's cgroup_mutex does mkdir and
//	rmdir (a removal runs after it is released)
//		the tree's write side (AddGroup: new_cgroup's creation)
//		the tree's read side (Lookup and Readdir: delete_cgroup's checks)
package sysfs
