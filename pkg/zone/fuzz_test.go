package zone_test

import (
	"strings"
	"testing"
	"unicode"

	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// FuzzParse: whatever Parse accepts comes back the same through its fully qualified form, and
// neither form carries a control character, white space or anything a Corefile or a shell reads
// as syntax.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"apps.example.com", "Apps.Example.COM.", ".", "", "a..b", "apps.example.com\n}", "a{b", "_srv.x-y.z",
		strings.Repeat("a", 63) + ".b", "*.example.com", "é.example.com", "a;b", "a b", "$x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		z, err := zone.Parse(s)
		if err != nil {
			return
		}
		again, err := zone.Parse(z.FQDN())
		if err != nil || again != z {
			t.Fatalf("Parse(%q).FQDN() = %q does not parse back to the same zone (%v)", s, z.FQDN(), err)
		}
		if shown, err := zone.Parse(z.String()); err != nil || shown != z {
			t.Fatalf("Parse(%q).String() = %q does not parse back to the same zone (%v)", s, z.String(), err)
		}
		for _, out := range []string{z.FQDN(), z.String()} {
			if strings.ContainsFunc(out, func(r rune) bool {
				return unicode.IsControl(r) || unicode.IsSpace(r) || r > unicode.MaxASCII || unicode.IsUpper(r)
			}) || strings.ContainsAny(out, "{};#\"'()$\\`*&|<>@") {
				t.Fatalf("Parse(%q) gave %q", s, out)
			}
		}
		if !z.Contains(z.FQDN()) || !z.Contains("x."+z.String()) {
			t.Fatalf("zone %q does not contain its own names", z)
		}
	})
}
