package cli

import (
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/valid"
	"github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// offlineZoneAndHost validates --zone (required) and --host (optional, inside the zone: it is
// the name the zone's template must answer).
func offlineZoneAndHost(zone, host string) (string, string, error) {
	if zone == "" {
		return "", "", usageErr("--addresses needs --zone: the zone the addresses serve (e.g. --zone apps.example.com)")
	}
	z, err := workstation.NormalizeZone(zone)
	if err != nil {
		return "", "", usageErr("invalid --zone: %v", err)
	}
	if host == "" {
		return z, "", nil
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if err := valid.Hostname(h); err != nil {
		return "", "", usageErr("invalid --host: %v", err)
	}
	if h != z && !strings.HasSuffix(h, "."+z) {
		return "", "", usageErr("--host %s is not in the zone %s: give a name that ends in .%s", h, z, z)
	}
	return z, h, nil
}
