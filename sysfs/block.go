package sysfs

import (
	"fmt"
	"strings"

	"github.com/kernfsim/kernfsim/kernfsim"
)

func (s *synth) diskName(i int) string { return "nvme" + itoa(i) + "n1" }

func (s *synth) diskPath(i int) string { return s.nvmePath(i) + "/" + s.diskName(i) }

// nvmeCtrl is the NVMe controller nvmeN, with its one namespace nvmeNn1.
func (s *synth) nvmeCtrl(i int) dir {
	return dir{
		{"dev", ro(fmt.Sprintf("240:%d", i))},
		{"device", link(pciPath(s.Netdevs + i))},
		{"firmware_rev", ro("2B2QEXM7")},
		{"model", ro("KERNFSIM NVMe SSD 1TB")},
		{"serial", ro(fmt.Sprintf("KFS%09d", i))},
		{"state", ro("live")},
		{"subsystem", link("class/nvme")},
		{"transport", ro("pcie")},
		{s.diskName(i), s.disk(i)},
	}
}

// disk is the block device nvmeNn1: 1 TB, block major 259 (blkext).
func (s *synth) disk(i int) dir {
	return dir{
		{"capability", roSrc(srcZero)},
		{"dev", ro(fmt.Sprintf("259:%d", i))},
		{"device", link(s.nvmePath(i))},
		{"ext_range", ro("256")},
		{"hidden", roSrc(srcZero)},
		{"queue", queueDir()},
		{"range", roSrc(srcZero)},
		{"removable", roSrc(srcZero)},
		{"ro", roSrc(srcZero)},
		{"size", ro("1953525168")},
		{"stat", roSrc(diskStat)},
		{"subsystem", link("class/block")},
		{"uevent", ro(fmt.Sprintf("MAJOR=259\nMINOR=%d\nDEVNAME=%s\nDEVTYPE=disk\nDISKSEQ=%d", i, s.diskName(i), i+1))},
	}
}

var diskStat kernfsim.Source = kernfsim.Static(strings.Repeat("       0 ", 16) + "       0\n")

func queueDir() dir {
	return dir{
		{"hw_sector_size", ro("512")},
		{"logical_block_size", ro("512")},
		{"max_hw_sectors_kb", ro("2048")},
		{"max_sectors_kb", rwVal("1280")},
		{"nomerges", rwVal("0")},
		{"nr_requests", rwVal("1023")},
		{"physical_block_size", ro("512")},
		{"read_ahead_kb", rwVal("128")},
		{"rotational", rwVal("0")},
		{"scheduler", rw(newChoice(0, "none", "mq-deadline", "kyber", "bfq"))},
	}
}
