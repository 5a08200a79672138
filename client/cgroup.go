package client

import (
	"errors"
	"strconv"
	"strings"
)

// The cgroup v2 interface files a node agent reads (kubelet's cAdvisor,
// systemd-oomd) come in the formats Documentation/admin-guide/cgroup-v2.rst
// names: flat keyed ("KEY VALUE" a line: memory.stat, cpu.stat), nested
// keyed ("KEY SUBKEY=VALUE ..." a line: io.stat), and newline separated
// values (cgroup.procs, and memory.current's single value). Package sysfs
// writes them; these parse them, for the counters' values only (the
// pressure files' decimals are not parsed here).

// KeyValue is one counter of a flat or nested keyed file.
type KeyValue struct {
	Key   string
	Value uint64
}

// NestedKeyed is one line of a nested keyed file: "259:0 rbytes=4096
// wbytes=0 ..." is Key 259:0 with the values in their order.
type NestedKeyed struct {
	Key    string
	Values []KeyValue
}

// ErrCgroupFormat is a cgroup file that is not in the format asked for.
var ErrCgroupFormat = errors.New("cgroup file: bad format")

// ParseFlatKeyed parses a flat keyed file into its counters, in order.
// Every line is "KEY VALUE", the value a decimal number; an empty file
// has none.
func ParseFlatKeyed(data []byte) ([]KeyValue, error) {
	var out []KeyValue
	for _, line := range cgroupLines(data) {
		key, val, ok := strings.Cut(line, " ")
		n, err := strconv.ParseUint(val, 10, 64)
		if !ok || key == "" || err != nil {
			return nil, ErrCgroupFormat
		}
		out = append(out, KeyValue{key, n})
	}
	return out, nil
}

// ParseNestedKeyed parses a nested keyed file: each line a key and one or
// more "SUBKEY=VALUE" fields, separated by single blanks.
func ParseNestedKeyed(data []byte) ([]NestedKeyed, error) {
	var out []NestedKeyed
	for _, line := range cgroupLines(data) {
		fields := strings.Split(line, " ")
		if len(fields) < 2 || fields[0] == "" {
			return nil, ErrCgroupFormat
		}
		nk := NestedKeyed{Key: fields[0]}
		for _, f := range fields[1:] {
			key, val, ok := strings.Cut(f, "=")
			n, err := strconv.ParseUint(val, 10, 64)
			if !ok || key == "" || err != nil {
				return nil, ErrCgroupFormat
			}
			nk.Values = append(nk.Values, KeyValue{key, n})
		}
		out = append(out, nk)
	}
	return out, nil
}

// ParseValues parses a newline separated file of decimal numbers
// (cgroup.procs' pids, memory.current's one value).
func ParseValues(data []byte) ([]uint64, error) {
	var out []uint64
	for _, line := range cgroupLines(data) {
		n, err := strconv.ParseUint(line, 10, 64)
		if err != nil {
			return nil, ErrCgroupFormat
		}
		out = append(out, n)
	}
	return out, nil
}

// cgroupLines are data's lines, each ended by a newline (the last one
// too); nil for an empty file, and one empty line (a format error for
// every parser) where data does not end in a newline.
func cgroupLines(data []byte) []string {
	s := string(data)
	if s == "" {
		return nil
	}
	if !strings.HasSuffix(s, "\n") {
		return []string{""}
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// Get is the value of key in kvs, and whether it is there.
func Get(kvs []KeyValue, key string) (uint64, bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return 0, false
}
