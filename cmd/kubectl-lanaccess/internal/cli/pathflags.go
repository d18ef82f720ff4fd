package cli

import (
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/valid"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// offlineZoneAndHost validates --zone (required) and --host (optional, inside the zone: it is
// the name the zone's template must answer).
func offlineZoneAndHost(name, host string) (zone.Zone, string, error) {
	if name == "" {
		return zone.Zone{}, "", usageErr("--addresses needs --zone: the zone the addresses serve (e.g. --zone apps.example.com)")
	}
	z, err := parseZoneFlag(name)
	if err != nil {
		return zone.Zone{}, "", err
	}
	if host == "" {
		return z, "", nil
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if err := valid.Hostname(h); err != nil {
		return zone.Zone{}, "", usageErr("invalid --host: %v", err)
	}
	if !z.Contains(h) {
		return zone.Zone{}, "", usageErr("--host %s is not in the zone %s: give a name that ends in .%s", h, z, z)
	}
	return z, h, nil
}

// parseZoneFlag validates --zone (zone.Parse): "" is no zone (discover it); anything else that
// is not a zone is a usage error, before anything runs.
func parseZoneFlag(name string) (zone.Zone, error) {
	if name == "" {
		return zone.Zone{}, nil
	}
	z, err := zone.Parse(name)
	if err != nil {
		return zone.Zone{}, usageErr("invalid --zone: %v (a DNS name such as apps.example.com)", err)
	}
	return z, nil
}
