package corefiletest

import (
	"os"

	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/internal/corednsrun"
)

// Truth is a case's coredns.yaml: what the real CoreDNS did with each workload of the case,
// and of each variant (testdata/corpus/README.md).
type Truth struct {
	CoreDNS  string         `json:"coredns"`
	Runs     []Run          `json:"runs"`
	Variants []TruthVariant `json:"variants"`
}

// TruthVariant is the case with the objects of variants/NAME.yaml in place.
type TruthVariant struct {
	Name  string `json:"name"`
	About string `json:"about"`
	Runs  []Run  `json:"runs"`
}

// Run, PortAnswers and Answer are the harness's format (internal/corednsrun).
type (
	Run         = corednsrun.Run
	PortAnswers = corednsrun.PortAnswers
	Answer      = corednsrun.Answer
)

// ReadTruth reads a coredns.yaml.
func ReadTruth(path string) (Truth, error) {
	var t Truth
	b, err := os.ReadFile(path)
	if err != nil {
		return t, err
	}
	err = yaml.Unmarshal(b, &t)
	return t, err
}
