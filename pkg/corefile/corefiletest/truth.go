package corefiletest

import (
	"os"
	"strings"

	"github.com/miekg/dns"
	"sigs.k8s.io/yaml"
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

// Run is one CoreDNS workload: whether it started, and its answers per Corefile port.
type Run struct {
	Workload string        `json:"workload"`
	Conf     string        `json:"conf"`
	Starts   bool          `json:"starts"`
	Error    string        `json:"error"`
	Ports    []PortAnswers `json:"ports"`
}

// PortAnswers are the answers on one server port, as written in the Corefile.
type PortAnswers struct {
	Port    string   `json:"port"`
	Answers []Answer `json:"answers"`
}

// Answer is CoreDNS's reply to one question.
type Answer struct {
	Question  string   `json:"question"`
	Transport string   `json:"transport"`
	Rcode     string   `json:"rcode"`
	Flags     []string `json:"flags"`
	Answer    []string `json:"answer"`
	Authority []string `json:"authority"`
	Forwarded bool     `json:"forwarded"`
	Error     string   `json:"error"`
}

// NameType splits "grafana.apps.example.com. A".
func (a Answer) NameType() (string, uint16) {
	name, t, _ := strings.Cut(a.Question, " ")
	return name, dns.StringToType[t]
}

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
