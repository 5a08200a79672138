// Package client speaks to a kernfsim tree through its files, as any process on a mount does.
//
// It owns the client side of three formats. The control files of the
// in-tree ABI (bus/kernfsim/new_device, delete_device, new_cgroup,
// delete_cgroup) take the writes built here; package sysfs parses them
// with the parsers here. The stats file (kernel/kernfsim/stats) has a
// typed parser of what package fusefs writes. The cgroup v2 interface
// files a node agent reads have parsers of their flat and nested keyed
// formats (cgroup.go). It has no state and no locks.
package client

import (
	"errors"
	"strconv"
	"strings"
)

// Paths of the in-tree ABI, relative to the tree's root.
const (
	NewDevicePath    = "bus/kernfsim/new_device"
	DeleteDevicePath = "bus/kernfsim/delete_device"
	DevicesDir       = "devices/kernfsim"
	StatsPath        = "kernel/kernfsim/stats"
	// The cgroup control files, present where the tree has a cgroup v2
	// hierarchy under CgroupDir; their paths are relative to CgroupDir.
	NewCgroupPath    = "bus/kernfsim/new_cgroup"
	DeleteCgroupPath = "bus/kernfsim/delete_cgroup"
	CgroupDir        = "fs/cgroup"
)

// FallbackNotice begins the line a kernfsim server prints on stderr when
// it was left to choose its transport and serves over /dev/fuse because
// io_uring is unavailable; the reason, with what would enable it,
// follows on the line.
const FallbackNotice = "kernfsim: serving over /dev/fuse, not io_uring: "

// NewDeviceLine is the line to write to new_device to create device
// name with nattrs extra attributes: "NAME NATTRS\n".
func NewDeviceLine(name string, nattrs int) []byte {
	return []byte(name + " " + strconv.Itoa(nattrs) + "\n")
}

// DeleteDevicesLine is the line to write to delete_device to remove the
// devices names under one grace period: "NAME [NAME...]\n".
func DeleteDevicesLine(names ...string) []byte {
	return []byte(strings.Join(names, " ") + "\n")
}

// NewCgroupLine is the line to write to new_cgroup to make the cgroup at
// path (below CgroupDir, as mkdir(2) would there): "PATH\n".
func NewCgroupLine(path string) []byte { return []byte(path + "\n") }

// DeleteCgroupLine is the line to write to delete_cgroup to remove the
// cgroup at path, as rmdir(2) would: "PATH\n".
func DeleteCgroupLine(path string) []byte { return []byte(path + "\n") }

// ErrSyntax is a control-file write that is not "NAME [NATTRS]",
// "NAME [NAME...]" or "PATH".
var ErrSyntax = errors.New("kernfsim control file: bad syntax")

// ParseNewDevice splits a write to new_device into its name and
// attribute count (0 if absent). One trailing newline is allowed; the
// name is not checked here (the tree's name rules apply). NATTRS must be
// a number from 0 to maxAttrs.
func ParseNewDevice(data []byte, maxAttrs int) (name string, nattrs int, err error) {
	fields, err := controlFields(data)
	if err != nil || len(fields) > 2 {
		return "", 0, ErrSyntax
	}
	if len(fields) == 2 {
		n, err := strconv.Atoi(fields[1])
		if err != nil || n < 0 || n > maxAttrs {
			return "", 0, ErrSyntax
		}
		nattrs = n
	}
	return fields[0], nattrs, nil
}

// ParseDeleteDevices splits a write to delete_device into its names.
func ParseDeleteDevices(data []byte) ([]string, error) {
	return controlFields(data)
}

// ParseCgroupPath is the cgroup path a write to new_cgroup or
// delete_cgroup names: one field of names separated by "/", a leading "/"
// allowed (as /proc/PID/cgroup writes them), none empty, "." or "..".
// The names are not checked otherwise here (the tree's name rules apply).
func ParseCgroupPath(data []byte) (string, error) {
	fields, err := controlFields(data)
	if err != nil || len(fields) != 1 {
		return "", ErrSyntax
	}
	p := strings.TrimPrefix(fields[0], "/")
	for _, name := range strings.Split(p, "/") {
		if name == "" || name == "." || name == ".." {
			return "", ErrSyntax
		}
	}
	return p, nil
}

// controlFields are the blank-separated fields of a control-file write:
// at least one, no NUL byte.
func controlFields(data []byte) ([]string, error) {
	s := string(data)
	fields := strings.Fields(strings.TrimSuffix(s, "\n"))
	if len(fields) == 0 || strings.ContainsRune(s, 0) {
		return nil, ErrSyntax
	}
	return fields, nil
}
