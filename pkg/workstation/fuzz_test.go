package workstation

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lanaccess/kubectl-lanaccess/internal/workstationtest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// resolvectl's output reaches the parser from the machine client-check runs on, with names
// (links, domains) others chose: it may skip what it does not understand but never panics, and
// every server it returns is a valid address. Seeded with the outputs recorded on the real
// workstation (testdata/real); `make fuzz` finds the target by name.
func FuzzParseResolvectlStatus(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(workstationtest.Dir(f), "*-status*.txt"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no recorded resolvectl status: %v", err)
	}
	for _, p := range files {
		f.Add(string(workstationtest.Output(f, strings.TrimSuffix(filepath.Base(p), ".txt"))))
	}
	f.Add(resolvectlOld)
	f.Fuzz(func(t *testing.T, s string) {
		for _, l := range ParseResolvectlStatus([]byte(s)) {
			for _, a := range append(l.Servers, l.CurrentServer) {
				if a.Zone() != "" || a.Is4In6() {
					t.Fatalf("server %s of link %q keeps a zone or a mapped form", a, l.Name)
				}
			}
			if l.Name == "" {
				t.Fatalf("a link without a name from %q", s)
			}
			_, _ = l.HasRoutingDomainFor(zone.MustParse("apps.example.com"))
		}
	})
}
