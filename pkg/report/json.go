package report

import (
	"bytes"
	"encoding/json"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

type jsonReport struct {
	SchemaVersion int               `json:"schemaVersion"`
	Command       string            `json:"command"`
	Cluster       Cluster           `json:"cluster"`
	Subject       map[string]string `json:"subject,omitempty"`
	Summary       engine.Summary    `json:"summary"`
	Checks        []jsonCheck       `json:"checks"`
}

type jsonCheck struct {
	ID         string           `json:"id"`
	Title      string           `json:"title"`
	Section    string           `json:"section,omitempty"`
	Status     engine.Status    `json:"status"`
	DurationMs int64            `json:"durationMs"`
	Reason     string           `json:"reason,omitempty"`
	Findings   []engine.Finding `json:"findings"`
	Suppressed map[string]int   `json:"suppressed,omitempty"`
}

// WriteJSON writes the stable JSON contract (schemaVersion 1).
func WriteJSON(w io.Writer, r Report) error {
	out := jsonReport{
		SchemaVersion: SchemaVersion,
		Command:       r.Command,
		Cluster:       r.Cluster,
		Summary:       engine.Summarize(r.Results),
		Checks:        make([]jsonCheck, 0, len(r.Results)),
	}
	if len(r.Subject) > 0 {
		out.Subject = map[string]string{}
		for _, kv := range r.Subject {
			out.Subject[kv.Key] = kv.Value
		}
	}
	for _, res := range r.Results {
		f := res.Findings
		if f == nil {
			f = []engine.Finding{}
		}
		out.Checks = append(out.Checks, jsonCheck{
			ID: res.ID, Title: res.Title, Section: res.Section, Status: res.Status,
			DurationMs: res.Duration.Milliseconds(), Reason: res.Reason, Findings: f, Suppressed: res.Suppressed,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteYAML writes the JSON contract as YAML (the same fields, the same schemaVersion).
func WriteYAML(w io.Writer, r Report) error {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		return err
	}
	out, err := yaml.JSONToYAML(buf.Bytes())
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}
