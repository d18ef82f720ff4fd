// Package zone is the one type for the zone the LAN DNS serves (e.g. apps.example.com): one
// validator, Parse, and the two forms every consumer needs, FQDN for DNS messages and Corefiles
// ("apps.example.com.") and String for people and workstation configuration ("apps.example.com").
//
// A zone reaches the plugin from flags and from cluster objects (a Corefile's server blocks)
// that someone else writes, and it goes into printed shell, PowerShell and Corefile snippets: so
// it is a host name and nothing more. Parse accepts letters, digits, hyphens (not at either end
// of a label) and underscores, labels of 1 to 63 octets, at most 253 octets without the final
// dot, and one trailing dot; it folds the case. Whitespace, control characters and anything a
// Corefile or a shell reads as syntax ({ } ; # " ' ( ) $ \ and the like) are refused, as is the
// root zone ".": a workstation told to send "." to the node addresses would send every name
// there, and the LAN DNS never serves the root alone.
package zone

import (
	"fmt"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/valid"
)

// Zone is a validated DNS zone, lower case. The zero Zone is "no zone" (IsZero); every other
// value came from Parse.
type Zone struct {
	name string // lower case, without the final dot
}

// Parse validates s as a zone (see the package comment) and returns it case-folded.
func Parse(s string) (Zone, error) {
	if s == "" || s == "." {
		return Zone{}, fmt.Errorf("zone %q: the root or an empty name is not a zone the LAN DNS serves", s)
	}
	if err := valid.Hostname(s); err != nil {
		return Zone{}, fmt.Errorf("zone: %w", err)
	}
	return Zone{name: strings.ToLower(strings.TrimSuffix(s, "."))}, nil
}

// MustParse is Parse for constants of tests and defaults; it panics on an invalid zone.
func MustParse(s string) Zone {
	z, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return z
}

// IsZero reports whether z is no zone.
func (z Zone) IsZero() bool { return z.name == "" }

// String is the display form, without the final dot ("apps.example.com"): what people read
// and what workstation configuration (nmcli, resolvectl, NRPT, /etc/resolver) is given. The
// zero Zone is "".
func (z Zone) String() string { return z.name }

// FQDN is the fully qualified form ("apps.example.com."): what DNS messages and CoreDNS
// compare. The zero Zone is "".
func (z Zone) FQDN() string {
	if z.name == "" {
		return ""
	}
	return z.name + "."
}

// Contains reports whether name is the zone's apex or a name below it, whatever its case and
// with or without its final dot. The zero Zone contains nothing.
func (z Zone) Contains(name string) bool {
	if z.name == "" {
		return false
	}
	n := strings.ToLower(strings.TrimSuffix(name, "."))
	return n == z.name || strings.HasSuffix(n, "."+z.name)
}
