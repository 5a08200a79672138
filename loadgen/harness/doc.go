// Package harness is what loadgen's engine and the tools beside it
// (soak, teardown, kernelprobe) share: a directory read with the
// benchmark's system calls (Dir), the kernfsim server they start and the
// line it prints once it serves (Server, Mount), the targets they
// measure (Target), the benchmark's operations by name (Op), latency
// histograms (Latency), failures by errno (ErrorTally), provenance, the
// limits of this process, and the JSON forms of these, which every
// tool's report embeds. It knows nothing of phases, comparisons or
// flags: the engine is package loadgen, the flags are cmd/loadgen's.
//
// Lock ordering. Server.outMu is the only lock here, and it is a root:
//
//	Server.outMu
//
// Server.outMu protects a server's captured output. It is taken alone,
// never around another lock. A server's first line on stdout closes
// Server.said once outMu is released.
package harness
