package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

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

// WriteYAML writes the JSON contract as YAML: the same fields in the same order, the same
// schemaVersion. It does not parse the JSON as YAML (a YAML parser refuses DEL and C1 controls,
// which certificate names, Location headers and Corefile tokens may hold): it builds the YAML
// node tree from the JSON tokens and lets the YAML encoder write every string, quoting and
// escaping the characters YAML cannot carry raw (go.yaml.in/yaml/v3, emitterc.go
// yaml_emitter_write_double_quoted_scalar).
func WriteYAML(w io.Writer, r Report) error {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		return err
	}
	dec := json.NewDecoder(&buf)
	dec.UseNumber()
	doc, err := yamlNode(dec)
	if err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return enc.Close()
}

// yamlNode reads one JSON value from dec as a YAML node. The input is the report's own JSON,
// so its depth is the contract's (evidence maps nest a few levels).
func yamlNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		if v == '{' {
			n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		for dec.More() {
			if v == '{' {
				key, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: fmt.Sprint(key)})
			}
			child, err := yamlNode(dec)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, child)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}, nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(v.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}, nil
	default: // nil
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
}
