package series

import (
	"context"
	"time"
)

// ProgressEvery is how often a run's progress is reported.
const ProgressEvery = 200 * time.Millisecond

// RunEach runs one for each item in turn, for a tool that measures
// several configurations, and hands every outcome to keep. It stops at
// the first error; when ctx ends it stops and returns ctx's error with
// interrupted set, so the caller reports what was kept as partial.
func RunEach[T, R any](ctx context.Context, items []T, one func(T) (R, error), keep func(R, error)) (interrupted bool, err error) {
	for _, it := range items {
		r, err := one(it)
		keep(r, err)
		if ctx.Err() != nil {
			return true, ctx.Err()
		}
		if err != nil {
			return false, err
		}
	}
	return false, nil
}
