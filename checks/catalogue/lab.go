package catalogue

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// labYAML says, for each check, which of the lab's real components its lab tests run against
// and which stand-ins remain on its path (issue 21: the catalogue shows what a verdict was
// proven on).
//
//go:embed lab.yaml
var labYAML []byte

// LabProof is lab.yaml: the components, the stand-ins and each check's list of them.
type LabProof struct {
	Components map[string]string   `json:"components"`
	Standins   map[string]string   `json:"standins"`
	Checks     map[string][]string `json:"checks"`
}

// Lab returns lab.yaml, parsed; a malformed file is a bug of the build (its test fails first).
func Lab() LabProof {
	var p LabProof
	if err := yaml.UnmarshalStrict(labYAML, &p); err != nil {
		panic("checks/catalogue/lab.yaml: " + err.Error())
	}
	return p
}

// labSection is the catalogue page's table of what each check was proven on in the lab.
func labSection(es []Entry) string {
	p := Lab()
	var b strings.Builder
	b.WriteString("\n## Proven in the lab on\n\nThe real components each check's lab tests run against, and the stand-ins left on its path (*in italics*; ")
	b.WriteString("[the lab](../../lab/README.md#how-the-pieces-are-real) says why each remains and what it cannot prove).\n\n")
	b.WriteString("| ID | Real components | Stand-ins |\n|----|-----------------|-----------|\n")
	for _, e := range es {
		var real, stand []string
		for _, c := range p.Checks[e.ID] {
			if _, ok := p.Standins[c]; ok {
				stand = append(stand, "*"+c+"*")
			} else {
				real = append(real, c)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", e.ID, strings.Join(real, ", "), strings.Join(stand, ", "))
	}
	b.WriteString("\n| Component | What runs |\n|-----------|-----------|\n")
	for _, m := range []map[string]string{p.Components, p.Standins} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			name := k
			if _, stand := p.Standins[k]; stand {
				name = "*" + k + "*"
			}
			fmt.Fprintf(&b, "| %s | %s |\n", name, m[k])
		}
	}
	return b.String()
}
