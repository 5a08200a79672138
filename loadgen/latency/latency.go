package latency

import (
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kernfsim/kernfsim/internal/textout"
)

// Latency summarises a histogram of operation latencies.
type Latency struct {
	Count int64
	Mean  time.Duration
	P50   time.Duration
	P99   time.Duration
	P999  time.Duration
	Max   time.Duration
}

// The histograms' bounds: 1 ns to HistMax at 3 significant digits;
// a latency past HistMax is recorded as HistMax.
const (
	HistMax    = int64(60 * time.Second)
	histDigits = 3
)

// NewHistogram returns an empty histogram whose pages are already faulted in
// (Reset writes every count), so that recording does not fault.
func NewHistogram() *hdrhistogram.Histogram {
	h := hdrhistogram.New(1, HistMax, histDigits)
	h.Reset()
	return h
}

// RecordLatency records d in h; past the histogram's range it records its
// maximum.
func RecordLatency(h *hdrhistogram.Histogram, d time.Duration) {
	if h.RecordValue(int64(d)) != nil {
		h.RecordValue(HistMax)
	}
}

// Summarize is h's count, mean, percentiles and maximum.
func Summarize(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	q := h.ValueAtPercentilesSlice([]float64{50, 99, 99.9})
	return Latency{
		Count: h.TotalCount(),
		Mean:  time.Duration(h.Mean()),
		P50:   time.Duration(q[0]),
		P99:   time.Duration(q[1]),
		P999:  time.Duration(q[2]),
		Max:   time.Duration(h.Max()),
	}
}

// Describe is l in one line: mean, percentiles, maximum and count.
func (l Latency) Describe() string {
	return fmt.Sprintf("mean %s  p50 %s  p99 %s  p99.9 %s  max %s  (%d ops)",
		textout.Dur(l.Mean), textout.Dur(l.P50), textout.Dur(l.P99), textout.Dur(l.P999), textout.Dur(l.Max), l.Count)
}
