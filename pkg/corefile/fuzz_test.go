package corefile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/miekg/dns"
)

// FuzzParse feeds arbitrary text to Parse: it must never panic, every outcome is either a model
// whose lines point into the text or a ParseError, the query model answers every question, and
// on text without imports or placeholders the grouping is caddy's own.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "corefiles", "*.Corefile"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("import x\n(x) {\n}\n"))
	f.Add([]byte("a {\n template IN A {\n answer \"{{ range 100000000000 }}x{{ end }}\"\n }\n}\n"))
	f.Add([]byte("\"a\\\"b\" {$X} {\n\"#\" \"\"\n}"))
	f.Fuzz(func(t *testing.T, src []byte) {
		c, err := Parse("fuzz", src)
		if err != nil {
			if _, ok := errors.AsType[*ParseError](err); !ok {
				t.Fatalf("error is not a *ParseError: %T %v", err, err)
			}
			if c != nil {
				t.Fatal("a model came back with an error")
			}
		} else {
			checkModel(t, c, src)
		}
		if !bytes.Contains(src, []byte("import")) {
			sameAsCaddy(t, src)
		}
	})
}

// checkModel: every line of the model points into the text, and the query model answers.
func checkModel(t *testing.T, c *Corefile, src []byte) {
	t.Helper()
	lines := bytes.Count(src, []byte("\n")) + 1
	for _, b := range c.Blocks {
		for _, p := range b.Plugins {
			if p.File == "" && (p.Line < 1 || p.Line > lines) {
				t.Fatalf("plugin %q at line %d outside 1..%d", p.Name, p.Line, lines)
			}
		}
		for _, port := range b.Ports() {
			_ = c.Query(Question{Name: "x.apps.example.com", Type: dns.TypeA, Port: port})
		}
	}
	_ = c.TemplateAZones()
}
