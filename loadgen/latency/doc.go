// Package latency summarises HdrHistogram latencies into percentiles.
package latency
