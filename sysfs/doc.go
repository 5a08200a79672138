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
//   - cpuinfo (WriteCPUInfo): a /proc/cpuinfo consistent with a tree.
//   - The in-tree ABI (AddABI): bus/kernfsim/new_device and
//     delete_device, devices/kernfsim, class/kernfsim and the stats file.
//   - Assemble: the tree every command and loadgen target serves, built
//     one way from one set of options.
//
// Concurrency: the package holds no lock of its own. Attribute state
// (cpu online bits, memory block state, choices) is accessed atomically;
// structural changes (new_device, memory probe) go through the tree's
// writers, under the tree's write side.
package sysfs
