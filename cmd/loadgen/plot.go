package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/loadgen/plot"
	"github.com/kernfsim/kernfsim/loadgen/report"
)

func newPlotCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "plot RESULT.json -o FILE.{svg,png,pdf}",
		Short: "Redraw the plot of a saved comparison (loadgen compare --format json)",
		Long: `plot draws a comparison saved with loadgen compare --format json as
compare --plot would have: a panel per op, the median per-op against threads
(log-log), a line per row, each point's min-max over the runs as a bar. The
format follows the extension of -o: svg, png or pdf.`,
		Example: `  loadgen compare --sim --format json --out result.json
  loadgen plot result.json -o result.png`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &cli.UsageError{Err: fmt.Errorf("plot takes one RESULT.json, got %d arguments: e.g. loadgen plot result.json -o result.svg", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return redraw(args[0], out) },
	}
	cli.PathVarP(cmd.Flags(), &out, "out", "o", "", "the plot `FILE`: .svg, .png or .pdf")
	return cmd
}

func redraw(in, out string) error {
	if out == "" {
		return &cli.UsageError{Err: errors.New("-o FILE is missing: name the plot to write, e.g. -o result.svg")}
	}
	f, err := os.Open(in)
	if err != nil {
		return &cli.UsageError{Err: err}
	}
	defer f.Close()
	res, err := report.ReadCompareJSON(f)
	var se *report.SchemaError
	if errors.As(err, &se) {
		err = fmt.Errorf("%w: write one with loadgen compare --format json", err)
	}
	if err != nil {
		return &cli.UsageError{Err: fmt.Errorf("%s: %w", in, err)}
	}
	w, format, closePlot, err := openPlot(out)
	if err != nil {
		return err
	}
	return errors.Join(plot.WriteCompare(w, res, format), closePlot())
}

// openPlot creates the plot file path, whose extension names its format;
// close closes it. An unknown extension is bad input, and nothing is
// created.
func openPlot(path string) (w io.Writer, format string, close func() error, err error) {
	if path == "" {
		return nil, "", func() error { return nil }, nil
	}
	format, ok := plot.Format(path)
	if !ok {
		return nil, "", nil, &cli.UsageError{Err: fmt.Errorf("plot file %s: the extension names the format: .%s", path,
			strings.Join(plot.Formats, ", ."))}
	}
	file, err := os.Create(path)
	if err != nil {
		return nil, "", nil, &cli.UsageError{Err: fmt.Errorf("plot file: %w", err)}
	}
	return file, format, file.Close, nil
}
