package loadgen

import (
	"fmt"
	"io"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteComparePlot draws r as SVG: a panel per op, median per-op latency
// (log scale) against threads (log scale), a line per row.
func WriteComparePlot(w io.Writer, r CompareResult) error {
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
	c := vgsvg.New(width, panelHeight*vg.Length(len(panels)))
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Centimeter / 2, PadTop: vg.Centimeter / 4,
		PadBottom: vg.Centimeter / 4, PadLeft: vg.Centimeter / 4, PadRight: vg.Centimeter / 4}
	canvases := plot.Align(panels, tiles, draw.New(c))
	for i := range panels {
		panels[i][0].Draw(canvases[i][0])
	}
	_, err := c.WriteTo(w)
	return err
}

func opPlot(r CompareResult, op string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("op=%s: median per-op latency, %d x %d ops per worker, %d CPUs", op, r.Repeats, r.Times, r.CPUs)
	p.X.Label.Text = "threads"
	p.Y.Label.Text = "per-op latency (us)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = threadTicks(r.Threads)
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	for i, row := range r.Rows {
		var xys plotter.XYs
		for _, th := range r.Threads {
			if c := r.Cell(i, op, th); c != nil && len(c.Runs) > 0 {
				xys = append(xys, plotter.XY{X: float64(th), Y: float64(c.Median().PerOp) / 1e3})
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		line.Color, points.Color, points.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
		p.Add(line, points)
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
