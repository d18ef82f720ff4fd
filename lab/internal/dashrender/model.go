// Package dashrender draws a Grafana dashboard (its JSON model, as Grafana stores it) as an SVG
// picture, with the data a real Prometheus returns for each panel's queries: rows (repeated per
// value of a variable), stat panels, time series and tables. It knows the part of the model the
// monitor's dashboard uses, no more; it exists to show that dashboard in the README with real
// data from the lab, without running Grafana.
package dashrender

import (
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
)

// Dashboard is the part of Grafana's dashboard model the renderer reads.
type Dashboard struct {
	Title  string  `json:"title"`
	Panels []Panel `json:"panels"`
}

// Panel is one panel of the model.
type Panel struct {
	Type            string           `json:"type"`
	Title           string           `json:"title"`
	Repeat          string           `json:"repeat"`
	GridPos         GridPos          `json:"gridPos"`
	Targets         []Target         `json:"targets"`
	FieldConfig     FieldConfig      `json:"fieldConfig"`
	Transformations []Transformation `json:"transformations"`
}

// GridPos places a panel on Grafana's grid: 24 columns, rows of 30 pixels.
type GridPos struct {
	X int `json:"x"`
	Y int `json:"y"`
	W int `json:"w"`
	H int `json:"h"`
}

// Target is one query.
type Target struct {
	Expr         string `json:"expr"`
	LegendFormat string `json:"legendFormat"`
	Instant      bool   `json:"instant"`
}

// FieldConfig carries the unit, decimals, thresholds and value mappings.
type FieldConfig struct {
	Defaults  FieldDefaults `json:"defaults"`
	Overrides []struct {
		Properties []struct {
			ID    string          `json:"id"`
			Value json.RawMessage `json:"value"`
		} `json:"properties"`
	} `json:"overrides"`
}

// FieldDefaults are the field options the renderer honours.
type FieldDefaults struct {
	Unit       string   `json:"unit"`
	Decimals   *int     `json:"decimals"`
	Min        *float64 `json:"min"`
	Max        *float64 `json:"max"`
	Thresholds struct {
		Steps []struct {
			Color string   `json:"color"`
			Value *float64 `json:"value"`
		} `json:"steps"`
	} `json:"thresholds"`
}

// Transformation is Grafana's "organize" transformation (the only one the renderer applies).
type Transformation struct {
	ID      string `json:"id"`
	Options struct {
		ExcludeByName map[string]bool   `json:"excludeByName"`
		IndexByName   map[string]int    `json:"indexByName"`
		RenameByName  map[string]string `json:"renameByName"`
	} `json:"options"`
}

// Parse reads a dashboard model.
func Parse(raw []byte) (Dashboard, error) {
	var d Dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return d, fmt.Errorf("dashboard JSON: %w", err)
	}
	return d, nil
}

// Expand repeats each row whose Repeat names a variable once per value of vars[variable]: the
// row and the panels below it (up to the next row), with $variable replaced, stacked in order.
// Other variables are replaced everywhere. It returns the panels in drawing order with final
// positions.
func (d Dashboard) Expand(vars map[string]string, repeats map[string][]string) []Panel {
	var out []Panel
	shift := 0
	for i := 0; i < len(d.Panels); {
		p := d.Panels[i]
		if p.Type != "row" || p.Repeat == "" {
			p.GridPos.Y += shift
			out = append(out, substitute(p, vars))
			i++
			continue
		}
		// The row's block: the row and the panels up to the next row.
		j := i + 1
		for j < len(d.Panels) && d.Panels[j].Type != "row" {
			j++
		}
		block := d.Panels[i:j]
		height := blockHeight(block)
		for n, value := range repeats[p.Repeat] {
			v := maps.Clone(vars)
			if v == nil {
				v = map[string]string{}
			}
			v[p.Repeat] = value
			for _, q := range block {
				q.GridPos.Y += shift + n*height
				out = append(out, substitute(q, v))
			}
		}
		shift += (len(repeats[p.Repeat]) - 1) * height
		i = j
	}
	return out
}

func blockHeight(block []Panel) int {
	top, bottom := block[0].GridPos.Y, block[0].GridPos.Y
	for _, p := range block {
		bottom = max(bottom, p.GridPos.Y+p.GridPos.H)
	}
	return bottom - top
}

// substitute replaces $name and ${name} in titles and queries, longer names first ($address
// before a variable $a would match inside it).
func substitute(p Panel, vars map[string]string) Panel {
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	pairs := make([]string, 0, 4*len(names))
	for _, k := range names {
		pairs = append(pairs, "${"+k+"}", vars[k], "$"+k, vars[k])
	}
	r := strings.NewReplacer(pairs...)
	p.Title = r.Replace(p.Title)
	targets := make([]Target, len(p.Targets))
	for i, t := range p.Targets {
		t.Expr = r.Replace(t.Expr)
		targets[i] = t
	}
	p.Targets = targets
	return p
}
