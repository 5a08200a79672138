package main

import (
	"errors"
	"io"

	"github.com/spf13/cobra"
)

// measure is a measuring subcommand's run: it opens the output file out
// (or stdout), runs run with a progress line on stderr, clears the line,
// writes the result with write if ran says something was measured (an
// interrupted run writes what it has), and closes out. The errors are
// joined.
func measure[R any](cmd *cobra.Command, stderr io.Writer, out string, run func(*progressLine) (R, error),
	ran func(R) bool, write func(io.Writer, R) error) (R, error) {
	w, closeOut, err := openOut(out, cmd.OutOrStdout())
	if err != nil {
		var none R
		return none, err
	}
	prog := newProgressLine(stderr)
	res, err := run(prog)
	prog.clear()
	if ran(res) {
		err = errors.Join(err, write(w, res))
	}
	return res, errors.Join(err, closeOut())
}

// writerFor is the writer of an output format: text (the default, "seed"
// or "table"), json or bench.
func writerFor[R any](format string, text, json, bench func(io.Writer, R) error) func(io.Writer, R) error {
	switch format {
	case "json":
		return json
	case "bench":
		return bench
	}
	return text
}
