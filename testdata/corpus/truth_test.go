//go:build corpus

// Package corpus holds real-world configurations of the LAN-access setup and the ground truth
// about them. This file is the truth harness: for every case it lays out the files the CoreDNS
// pods of the case would see, runs the real CoreDNS binary on them (loopback only, bounded in
// time) and records what it does in the case's coredns.yaml. It reads nothing from the
// project's own packages: the truth must not depend on the code it judges.
//
//	go test -tags corpus ./testdata/corpus/ -run TestCoreDNSTruth            # compare with coredns.yaml
//	go test -tags corpus ./testdata/corpus/ -run TestCoreDNSTruth -update    # rewrite coredns.yaml
//	go test -tags corpus ./testdata/corpus/ -run 'TestCoreDNSTruth/k3s-'     # some cases
//
// The binary is the one the lab builds (lab/build.sh): $CORPUS_COREDNS, else
// ~/.cache/kubectl-lanaccess/lab/coredns-v1.14.7/coredns (its directory must hold `.complete`).
package corpus

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	yaml3 "sigs.k8s.io/yaml/goyaml.v3"
)

var update = flag.Bool("update", false, "rewrite each case's coredns.yaml from the real CoreDNS binary")

// corednsVersion is the CoreDNS the lab builds; coredns.yaml records the version that answered.
const corednsVersion = "v1.14.7"

func corednsBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CORPUS_COREDNS"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatalf("no home directory to find the lab's CoreDNS: %v (set CORPUS_COREDNS)", err)
	}
	dir := filepath.Join(home, ".cache", "kubectl-lanaccess", "lab", "coredns-"+corednsVersion)
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		t.Fatalf("the lab's CoreDNS is not built (%v): run lab/build.sh, or set CORPUS_COREDNS to a coredns binary", err)
	}
	return filepath.Join(dir, "coredns")
}

// caseDirs lists the case directories: those holding an objects.yaml.
func caseDirs(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob("*/objects.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range m {
		out = append(out, filepath.Dir(f))
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatal("no case directory (*/objects.yaml) under testdata/corpus")
	}
	return out
}

// truthFile is a case's coredns.yaml.
type truthFile struct {
	CoreDNS  string     `json:"coredns" yaml:"coredns"`
	Runs     []instance `json:"runs" yaml:"runs"`
	Variants []variant  `json:"variants,omitempty" yaml:"variants,omitempty"`
}

// variant is the case with the objects of variants/<name>.yaml in place of those of the same
// kind, namespace and name: how a remediation, right or wrong, is proven on the real binary.
type variant struct {
	Name  string     `json:"name" yaml:"name"`
	About string     `json:"about" yaml:"about"`
	Runs  []instance `json:"runs" yaml:"runs"`
}

const truthHeader = `# Ground truth from the real CoreDNS binary, written by truth_test.go; do not edit by hand:
#   go test -tags corpus ./testdata/corpus/ -run 'TestCoreDNSTruth/<case>$' -update
# Each run is one CoreDNS workload of objects.yaml: the files its pods see (the ConfigMap volumes
# at their mount paths), the only rewrites made to run it on loopback, whether it starts, and its
# answers per server port of the Corefile ("port" is the port written in the Corefile).
# Upstream of forward: a stub that plays the public DNS (the zone's names have the public VPN
# address 100.64.0.10 / fd7a:115c:a1e0::a, example.org has 198.51.100.7 / 2001:db8::7, all else
# NXDOMAIN); "forwarded: true" means the stub received the question.
`

func TestCoreDNSTruth(t *testing.T) {
	bin := corednsBinary(t)
	for _, dir := range caseDirs(t) {
		t.Run(dir, func(t *testing.T) {
			c, err := loadCase(dir)
			if err != nil {
				t.Fatal(err)
			}
			var tf truthFile
			tf.CoreDNS = corednsVersion
			for _, w := range c.corednsWorkloads() {
				tf.Runs = append(tf.Runs, runWorkload(t, bin, c, w))
			}
			if len(tf.Runs) == 0 {
				t.Fatalf("%s: no workload runs CoreDNS with -conf", dir)
			}
			vfiles, err := filepath.Glob(filepath.Join(dir, "variants", "*.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			sort.Strings(vfiles)
			for _, vf := range vfiles {
				vc, about, err := c.withVariant(vf)
				if err != nil {
					t.Fatal(err)
				}
				v := variant{Name: strings.TrimSuffix(filepath.Base(vf), ".yaml"), About: about}
				for _, w := range vc.corednsWorkloads() {
					v.Runs = append(v.Runs, runWorkload(t, bin, vc, w))
				}
				tf.Variants = append(tf.Variants, v)
			}
			var buf bytes.Buffer
			enc := yaml3.NewEncoder(&buf)
			enc.SetIndent(2)
			if err := enc.Encode(tf); err != nil {
				t.Fatal(err)
			}
			body := buf.Bytes()
			got := append([]byte(truthHeader), body...)
			path := filepath.Join(dir, "coredns.yaml")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (write it with -update)", err)
			}
			if !bytes.Equal(want, got) {
				t.Errorf("%s differs from what CoreDNS %s does now; rerun with -update and review the diff:\n%s", path, corednsVersion, firstDiff(string(want), string(got)))
			}
		})
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(a, b string) string {
	la, lb := bytes.Split([]byte(a), []byte("\n")), bytes.Split([]byte(b), []byte("\n"))
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y []byte
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if !bytes.Equal(x, y) {
			return fmt.Sprintf("line %d:\n  file: %s\n  now:  %s", i+1, x, y)
		}
	}
	return "(same lines, different bytes)"
}
