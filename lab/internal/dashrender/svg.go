package dashrender

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Grafana's grid: 24 columns; a row unit is 30 pixels. The picture is 1200 pixels wide.
const (
	colWidth  = 50
	rowHeight = 30
	gap       = 4
	headerH   = 44
	width     = 24 * colWidth
)

// Grafana's dark theme and its named colours.
var palette = map[string]string{
	"green": "#73bf69", "red": "#f2495c", "orange": "#ff9830", "yellow": "#fade2a", "gray": "#8e8e8e",
	"blue": "#5794f2", "purple": "#b877d9",
}

var seriesColors = []string{"#73bf69", "#fade2a", "#5794f2", "#ff9830", "#f2495c", "#b877d9", "#8ab8ff"}

const (
	background = "#111217"
	panelBG    = "#181b1f"
	border     = "#2c3235"
	text       = "#ccccdc"
	faint      = "#8e8e8e"
)

// Options say what to draw: the time range and step of the range queries, the variables, and
// the values of repeated rows.
type Options struct {
	Start, End time.Time
	Step       time.Duration
	Vars       map[string]string
	Repeats    map[string][]string
	// Subtitle is printed under the title (where the data came from).
	Subtitle string
}

// Render draws d with data from prom.
func Render(ctx context.Context, d Dashboard, prom Prometheus, o Options) (string, error) {
	panels := d.Expand(o.Vars, o.Repeats)
	bottom := 0
	for _, p := range panels {
		bottom = max(bottom, p.GridPos.Y+p.GridPos.H)
	}
	height := headerH + bottom*rowHeight + 8
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Inter, Helvetica, Arial, sans-serif">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="%s"/>`+"\n", width, height, background)
	fmt.Fprintf(&b, `<text x="8" y="20" font-size="16" font-weight="600" fill="%s">%s</text>`+"\n", text, esc(d.Title))
	fmt.Fprintf(&b, `<text x="8" y="36" font-size="11" fill="%s">%s</text>`+"\n", faint, esc(o.Subtitle))
	for _, p := range panels {
		x := p.GridPos.X*colWidth + gap/2
		y := headerH + p.GridPos.Y*rowHeight + gap/2
		w := p.GridPos.W*colWidth - gap
		h := p.GridPos.H*rowHeight - gap
		var err error
		switch p.Type {
		case "row":
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14" font-weight="600" fill="%s">%s</text>`+"\n", x+4, y+19, text, esc(p.Title))
			continue
		case "stat":
			err = drawStat(ctx, &b, p, prom, o, x, y, w, h)
		case "timeseries":
			err = drawTimeSeries(ctx, &b, p, prom, o, x, y, w, h)
		case "table":
			err = drawTable(ctx, &b, p, prom, o, x, y, w, h)
		default:
			err = fmt.Errorf("panel %q: type %s is not drawn", p.Title, p.Type)
		}
		if err != nil {
			return "", fmt.Errorf("panel %q: %w", p.Title, err)
		}
	}
	b.WriteString("</svg>\n")
	return b.String(), nil
}

func frame(b *strings.Builder, title string, x, y, w, h int) {
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" rx="2" fill="%s" stroke="%s"/>`+"\n", x, y, w, h, panelBG, border)
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12" font-weight="500" fill="%s">%s</text>`+"\n", x+8, y+17, text, esc(title))
}

func esc(s string) string { return html.EscapeString(s) }

// colorFor maps a value to its threshold colour (the last step at or below it).
func colorFor(p Panel, v float64) string {
	c := "green"
	for _, s := range p.FieldConfig.Defaults.Thresholds.Steps {
		if s.Value == nil || v >= *s.Value {
			c = s.Color
		}
	}
	if hex, ok := palette[c]; ok {
		return hex
	}
	return c
}

// format writes v in the panel's unit.
func format(p Panel, v float64) string {
	d := p.FieldConfig.Defaults
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "NaN"
	}
	if d.Unit == "s" {
		switch {
		case math.Abs(v) < 1 && v != 0:
			return trimNum(v*1000, d.Decimals) + " ms"
		case math.Abs(v) >= 120:
			return trimNum(v/60, new(1)) + " min"
		}
		return trimNum(v, d.Decimals) + " s"
	}
	return trimNum(v, d.Decimals)
}

func trimNum(v float64, decimals *int) string {
	if decimals != nil {
		return fmt.Sprintf("%.*f", *decimals, v)
	}
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

// instantAll runs every query of the panel at the end of the range.
func instantAll(ctx context.Context, p Panel, prom Prometheus, o Options) ([]Series, error) {
	var series []Series
	for _, t := range p.Targets {
		s, err := prom.Instant(ctx, t.Expr, o.End)
		if err != nil {
			return nil, err
		}
		series = append(series, s...)
	}
	return series, nil
}

func drawStat(ctx context.Context, b *strings.Builder, p Panel, prom Prometheus, o Options, x, y, w, h int) error {
	series, err := instantAll(ctx, p, prom, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" rx="2" fill="%s" stroke="%s"/>`+"\n", x, y, w, h, panelBG, border)
	label, fill := "No data", panelBG
	if len(series) > 0 && len(series[0].Values) > 0 {
		v := series[0].Values[0]
		label, fill = format(p, v), colorFor(p, v)
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" rx="2" fill="%s"/>`+"\n", x+1, y+1, w-2, h-2, fill)
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12" font-weight="500" fill="#ffffff">%s</text>`+"\n", x+8, y+17, esc(p.Title))
	size := min(h/2, 40)
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="%d" font-weight="600" text-anchor="middle" fill="#ffffff">%s</text>`+"\n", x+w/2, y+h/2+size/2+6, size, esc(label))
	return nil
}

// axisRange is the y axis of series: the panel's min and max where set, else the data's, widened
// to whole steps (four of them at least). ok is false when there is no data.
func axisRange(d FieldDefaults, series []Series) (lo, hi, step float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if d.Min != nil {
		lo = *d.Min
	}
	if d.Max != nil {
		hi = *d.Max
	}
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return 0, 0, 0, false
	}
	if hi <= lo {
		hi = lo + 1
	}
	step = niceStep((hi - lo) / 4)
	if d.Min == nil {
		lo = math.Floor(lo/step) * step
	}
	if d.Max == nil {
		hi = math.Ceil(hi/step) * step
		if hi-lo < 4*step {
			hi = lo + 4*step
		}
	}
	return lo, hi, step, true
}

// niceStep rounds a raw axis step to 1, 2, 2.5 or 5 times a power of ten, as Grafana's axes do.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

var legendLabel = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)

func legendOf(t Target, s Series) string {
	if t.LegendFormat == "" {
		return labelKey(s.Labels)
	}
	return legendLabel.ReplaceAllStringFunc(t.LegendFormat, func(m string) string {
		return s.Labels[legendLabel.FindStringSubmatch(m)[1]]
	})
}

func drawTimeSeries(ctx context.Context, b *strings.Builder, p Panel, prom Prometheus, o Options, x, y, w, h int) error {
	type line struct {
		name string
		s    Series
	}
	var lines []line
	for _, t := range p.Targets {
		ss, err := prom.Range(ctx, t.Expr, o.Start, o.End, o.Step)
		if err != nil {
			return err
		}
		for _, s := range ss {
			lines = append(lines, line{legendOf(t, s), s})
		}
	}
	frame(b, p.Title, x, y, w, h)
	left, right, top, bottomPad := x+46, x+w-10, y+28, 40
	plotH := h - 28 - bottomPad
	var all []Series
	for _, l := range lines {
		all = append(all, l.s)
	}
	lo, hi, step, ok := axisRange(p.FieldConfig.Defaults, all)
	if !ok {
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12" text-anchor="middle" fill="%s">No data</text>`+"\n", x+w/2, y+h/2, faint)
		return nil
	}
	yOf := func(v float64) float64 { return float64(top) + float64(plotH)*(1-(v-lo)/(hi-lo)) }
	span := o.End.Sub(o.Start).Seconds()
	xOf := func(t time.Time) float64 { return float64(left) + float64(right-left)*t.Sub(o.Start).Seconds()/span }
	for v := lo; v <= hi+step/1e6; v += step {
		yy := yOf(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="1"/>`+"\n", left, yy, right, yy, border)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="10" text-anchor="end" fill="%s">%s</text>`+"\n", left-4, yy+3, faint, esc(format(p, v)))
	}
	for i := range 4 {
		t := o.Start.Add(time.Duration(float64(o.End.Sub(o.Start)) * float64(i) / 3))
		fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="10" text-anchor="middle" fill="%s">%s</text>`+"\n", xOf(t), top+plotH+13, faint, t.UTC().Format("15:04"))
	}
	fmt.Fprintf(b, `<clipPath id="clip%d-%d"><rect x="%d" y="%d" width="%d" height="%d"/></clipPath><g clip-path="url(#clip%d-%d)">`+"\n", x, y, x, y, w, h, x, y)
	defer b.WriteString("</g>\n")
	legendX := left
	for i, l := range lines {
		color := seriesColors[i%len(seriesColors)]
		var path strings.Builder
		for j := range l.s.Times {
			px, py := xOf(l.s.Times[j]), yOf(l.s.Values[j])
			switch {
			case j == 0 || l.s.Times[j].Sub(l.s.Times[j-1]) > 2*o.Step:
				fmt.Fprintf(&path, "M%.1f %.1f", px, py)
			default:
				fmt.Fprintf(&path, "H%.1fV%.1f", px, py) // Grafana's "step after"
			}
		}
		// Later series are drawn thinner, so that one hidden under another still shows at its edges.
		fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="%.1f"/>`+"\n", path.String(), color, max(3.2-0.9*float64(i), 1.2))
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="3" fill="%s"/>`+"\n", legendX, y+h-14, color)
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="10" fill="%s">%s</text>`+"\n", legendX+14, y+h-10, text, esc(l.name))
		legendX += 24 + len(l.name)*11/2
	}
	return nil
}

// drawTable draws an instant query as a table: one column per label and the value, organised as
// the panel's "organize" transformation says, cells coloured by the value mappings.
func drawTable(ctx context.Context, b *strings.Builder, p Panel, prom Prometheus, o Options, x, y, w, h int) error {
	series, err := instantAll(ctx, p, prom, o)
	if err != nil {
		return err
	}
	frame(b, p.Title, x, y, w, h)
	org := organize(p)
	names := columns(series, org)
	colors := mappingColors(p)
	widths := map[string]int{}
	total := 0
	for _, n := range names {
		widths[n] = 90
		if org.Options.RenameByName[n] == "What it proves" || n == "title" {
			widths[n] = 0
		}
		total += widths[n]
	}
	for _, n := range names {
		if widths[n] == 0 {
			widths[n] = w - 16 - total
		}
	}
	sort.Slice(series, func(i, j int) bool { return series[i].Labels[names[0]] < series[j].Labels[names[0]] })
	rowY := y + 30
	cx := x + 8
	for _, n := range names {
		head := n
		if r, ok := org.Options.RenameByName[n]; ok {
			head = r
		}
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="11" font-weight="600" fill="%s">%s</text>`+"\n", cx+4, rowY+14, faint, esc(head))
		cx += widths[n]
	}
	rowY += 20
	for _, s := range series {
		if rowY+20 > y+h {
			break
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`+"\n", x+8, rowY, x+w-8, rowY, border)
		cx = x + 8
		for _, n := range names {
			v := s.Labels[n]
			if n == "Value" && len(s.Values) > 0 {
				v = trimNum(s.Values[0], nil)
			}
			if c, ok := colors[v]; ok && org.Options.RenameByName[n] == "Status" {
				fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="19" fill="%s"/>`+"\n", cx, rowY+1, widths[n]-4, c)
			}
			fmt.Fprintf(b, `<text x="%d" y="%d" font-size="11" fill="%s">%s</text>`+"\n", cx+4, rowY+14, text, esc(v))
			cx += widths[n]
		}
		rowY += 20
	}
	return nil
}

// organize is the panel's "organize" transformation (empty: none).
func organize(p Panel) Transformation {
	for _, t := range p.Transformations {
		if t.ID == "organize" {
			return t
		}
	}
	return Transformation{}
}

// columns are the table's columns: every label and the value, less the excluded ones, in the
// transformation's order (the others after, by name).
func columns(series []Series, org Transformation) []string {
	cols := map[string]bool{"Value": true}
	for _, s := range series {
		for k := range s.Labels {
			cols[k] = true
		}
	}
	var names []string
	for c := range cols {
		if !org.Options.ExcludeByName[c] {
			names = append(names, c)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		ii, iok := org.Options.IndexByName[names[i]]
		jj, jok := org.Options.IndexByName[names[j]]
		if iok && jok {
			return ii < jj
		}
		if iok != jok {
			return iok
		}
		return names[i] < names[j]
	})
	return names
}

// mappingColors reads the value mappings of the panel's overrides: value -> colour.
func mappingColors(p Panel) map[string]string {
	out := map[string]string{}
	for _, o := range p.FieldConfig.Overrides {
		for _, prop := range o.Properties {
			if prop.ID != "mappings" {
				continue
			}
			var maps []struct {
				Options map[string]struct {
					Color string `json:"color"`
				} `json:"options"`
			}
			if json.Unmarshal(prop.Value, &maps) != nil {
				continue
			}
			for _, m := range maps {
				for v, c := range m.Options {
					out[v] = c.Color
					if hex, ok := palette[c.Color]; ok {
						out[v] = hex
					}
				}
			}
		}
	}
	return out
}
