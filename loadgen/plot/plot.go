// Package plot draws a comparison (loadgen.CompareResult) as a figure.
//
// It draws a panel per op, per-op latency against threads, a line per
// row. It is
// the only package that imports gonum.
package plot

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/kernfsim/kernfsim/loadgen"
)

// Formats are the formats WriteCompare draws, by file extension.
var Formats = []string{"svg", "png", "pdf"}

// Format is the format of a plot file, from its extension: svg, png or
// pdf; ok is false for any other.
func Format(path string) (format string, ok bool) {
	f := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	for _, p := range Formats {
		if f == p {
			return f, true
		}
	}
	return "", false
}

// WriteCompare draws r in format (one of Formats): a panel per op, the
// median per-op latency (time to done for hwloc and lstopo; log scale)
// against threads (log scale), a line per row, and each point's spread
// over the runs (min to max) as an error bar.
func WriteCompare(w io.Writer, r loadgen.CompareResult, format string) error {
	var panels [][]*plot.Plot
	for _, op := range r.Ops {
		p, err := opPlot(r, op)
		if err != nil {
			return err
		}
		panels = append(panels, []*plot.Plot{p})
	}
	if len(panels) == 0 {
		return nil
	}
	const width, panelHeight = 16 * vg.Centimeter, 11 * vg.Centimeter
	c, err := plotCanvas(format, width, panelHeight*vg.Length(len(panels)))
	if err != nil {
		return err
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Centimeter / 2, PadTop: vg.Centimeter / 4,
		PadBottom: vg.Centimeter / 4, PadLeft: vg.Centimeter / 4, PadRight: vg.Centimeter / 4}
	canvases := plot.Align(panels, tiles, draw.New(c))
	for i := range panels {
		panels[i][0].Draw(canvases[i][0])
	}
	_, err = c.WriteTo(w)
	return err
}

// plotCanvas is a canvas of the size that writes format.
func plotCanvas(format string, w, h vg.Length) (vg.CanvasWriterTo, error) {
	switch format {
	case "svg":
		return vgsvg.New(w, h), nil
	case "png":
		return vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(150))}, nil
	case "pdf":
		return vgpdf.New(w, h), nil
	}
	return nil, fmt.Errorf("plot format %q: use one of %s", format, strings.Join(Formats, ", "))
}

// spreadPoints are a line's points with their spread, for error bars.
type spreadPoints struct {
	plotter.XYs
	plotter.YErrors
}

func opPlot(r loadgen.CompareResult, op string) (*plot.Plot, error) {
	p := plot.New()
	what := "median per-op latency"
	if loadgen.TimeToDoneOp(op) {
		what = "median time to done"
	}
	p.Title.Text = fmt.Sprintf("op=%s: %s (bars: min-max of %d runs), %d CPUs", op, what, r.Repeats, r.CPUs)
	p.X.Label.Text = "threads"
	p.Y.Label.Text = strings.TrimPrefix(what, "median ") + " (us)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = threadTicks(r.Threads)
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	for i, row := range r.Rows {
		var pts spreadPoints
		for _, th := range r.Threads {
			if c := r.Cell(i, op, th); c != nil && len(c.Runs) > 0 {
				sp := c.Spread()
				y := float64(sp.Median) / 1e3
				pts.XYs = append(pts.XYs, plotter.XY{X: float64(th), Y: y})
				pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{y - float64(sp.Min)/1e3, float64(sp.Max)/1e3 - y})
			}
		}
		if len(pts.XYs) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts.XYs)
		if err != nil {
			return nil, err
		}
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, err
		}
		line.Color, points.Color, points.Shape, bars.Color = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i), plotutil.Color(i)
		p.Add(line, points, bars)
		p.Legend.Add(row.Label(), line, points)
	}
	return p, nil
}

// threadTicks marks exactly the thread counts measured.
func threadTicks(threads []int) plot.ConstantTicks {
	ticks := make(plot.ConstantTicks, len(threads))
	for i, t := range threads {
		ticks[i] = plot.Tick{Value: float64(t), Label: strconv.Itoa(t)}
	}
	return ticks
}
