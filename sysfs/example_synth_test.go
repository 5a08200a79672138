package sysfs_test

import (
	"fmt"

	"github.com/kernfsim/kernfsim/kernfsim"
	"github.com/kernfsim/kernfsim/locking"
	"github.com/kernfsim/kernfsim/sysfs"
)

// A synthetic sysfs for 2 sockets of 2 cores with 2 threads each: Linux on
// x86 numbers the first thread of every core before the second threads, so
// cpu0's sibling is cpu4.
func ExampleNewSynthetic() {
	c := sysfs.SynthConfig{CPUs: 8, Sockets: 2, ThreadsPerCore: 2, MemBlocks: 16}.WithDefaults()
	t, err := sysfs.NewSynthetic(locking.MustNew("rwsem"), c)
	if err != nil {
		fmt.Println(err)
		return
	}
	w := kernfsim.NewWalker(t, kernfsim.WalkerOptions{})
	buf := make([]byte, kernfsim.PageSize)
	for _, path := range []string{
		"devices/system/cpu/cpu0/topology/thread_siblings_list",
		"devices/system/cpu/cpu0/topology/package_cpus_list",
		"devices/system/cpu/cpu0/topology/package_cpus",
		"devices/system/node/node1/cpulist",
		"class/net/eth0/device/numa_node",
	} {
		n, err := w.ReadFile(kernfsim.RootCred, path, buf)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %s", path, buf[:n])
	}
	// Output:
	// devices/system/cpu/cpu0/topology/thread_siblings_list: 0,4
	// devices/system/cpu/cpu0/topology/package_cpus_list: 0-1,4-5
	// devices/system/cpu/cpu0/topology/package_cpus: 33
	// devices/system/node/node1/cpulist: 2-3,6-7
	// class/net/eth0/device/numa_node: 0
}

// A config that asks for the impossible gets an error naming the field and
// what it may be.
func ExampleSynthConfig_Validate() {
	err := sysfs.SynthConfig{CPUs: 6, Sockets: 2, ThreadsPerCore: 2}.WithDefaults().Validate()
	fmt.Println(err)
	// Output: synthetic sysfs: CPUs = 6: must be a multiple of Sockets x ThreadsPerCore = 4
}
