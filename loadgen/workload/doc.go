// Package workload is the benchmark's operations and the directory they run on.
//
// Dir does the system calls a worker makes; Op names an operation.
package workload
