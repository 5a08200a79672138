package sysfs

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
)

// writeOnly is a write-only attribute (mode 0200) that drops what is
// written.
type writeOnly struct{}

func (writeOnly) Show(context.Context, *bytes.Buffer) error { return nil }

func (writeOnly) Store(context.Context, []byte) error { return nil }

func boolDigit(v bool) string {
	if v {
		return "1\n"
	}
	return "0\n"
}

// parseBool is kstrtobool: 1/y/Y/on true, 0/n/N/off false, else EINVAL.
func parseBool(data []byte) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(string(data))) {
	case "1", "y", "yes", "on":
		return true, nil
	case "0", "n", "no", "off":
		return false, nil
	}
	return false, syscall.EINVAL
}

// choice is one of fixed options, shown as "a [b] c" like the block
// scheduler and transparent_hugepage files; a store must name an option.
type choice struct {
	opts []string
	cur  atomic.Int32
}

func newChoice(cur int, opts ...string) *choice {
	c := &choice{opts: opts}
	c.cur.Store(int32(cur))
	return c
}

func (c *choice) Show(_ context.Context, buf *bytes.Buffer) error {
	cur := int(c.cur.Load())
	for i, o := range c.opts {
		if i > 0 {
			buf.WriteByte(' ')
		}
		if i == cur {
			o = "[" + o + "]"
		}
		buf.WriteString(o)
	}
	buf.WriteByte('\n')
	return nil
}

func (c *choice) Store(_ context.Context, data []byte) error {
	i := slices.Index(c.opts, strings.TrimSpace(string(data)))
	if i < 0 {
		return syscall.EINVAL
	}
	c.cur.Store(int32(i))
	return nil
}
