package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/faults"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/labctl"
)

// CommandRow is one plugin command measured on the lab as it is (issue 27): wall, CPU, peak
// memory and, when it runs as the audited ServiceAccount, the API requests the apiserver saw.
type CommandRow struct {
	Name    string
	Wall    Series // seconds
	CPU     Series // seconds
	RSS     Series // MB
	API     []APICounts
	Audited bool
	// Slowest are the slowest checks of the last run ("VPN006 1.2s, ...").
	Slowest string
}

// measureCommand runs the plugin with args from the laptop, once unmeasured, then b.Runs
// times; each exit code must be one of codes (a run that did not diagnose what the lab shows
// does not count).
func (b *Bench) measureCommand(ctx context.Context, name string, audited bool, args []string, codes ...int) (CommandRow, error) {
	row := CommandRow{Name: name, Audited: audited}
	argv := append([]string{b.Plugin}, args...)
	for i := range b.Runs + 1 {
		if audited {
			if err := b.Audit.Skip(); err != nil {
				return row, err
			}
		}
		s, err := RunProcess(ctx, 3*time.Minute, b.Layout.Laptop.NS, cleanEnv(), argv...)
		if err != nil {
			return row, fmt.Errorf("%s: %w\n%s", name, err, s.Stderr)
		}
		if err := wantExit(name, s, codes...); err != nil {
			return row, err
		}
		var rep doctorJSON
		if err := json.Unmarshal(s.Stdout, &rep); err != nil {
			return row, fmt.Errorf("%s (exit %d) printed no JSON report: %w\n%s", name, s.Code, err, s.Stderr)
		}
		var api APICounts
		if audited {
			if api, err = b.Audit.Settle(3 * time.Second); err != nil {
				return row, err
			}
		}
		if i == 0 {
			continue // warm-up
		}
		row.Wall = append(row.Wall, s.Wall.Seconds())
		row.CPU = append(row.CPU, s.CPU.Seconds())
		row.RSS = append(row.RSS, float64(s.MaxRSSKB)/1024)
		if audited {
			row.API = append(row.API, api)
		}
		row.Slowest = rep.Slowest(3)
	}
	return row, nil
}

// Commands measures vpn-trace on the lab as it comes up (the VPN pod's ip_forward is 0, the
// laptop's tunnel is connected: --from-client), as the audited ServiceAccount with the shipped
// read-only RBAC and the opt-in bundles vpn-trace uses (exec in the VPN namespace, the nodes'
// trusted readers, configz); and the full doctor, helper pods included, as the lab's admin (the
// helper bundle admits its own ServiceAccount only, so its requests are not audited here).
func (b *Bench) Commands(ctx context.Context) ([]CommandRow, error) {
	grants, err := faults.ManifestGrants("rbac-doctor", "rbac-vpn-exec", "rbac-node-read", "rbac-node-configz")
	if err != nil {
		return nil, err
	}
	if err := b.Faults.DeleteServiceAccount(ctx, labctl.AuditedServiceAccount); err != nil {
		return nil, err
	}
	kc, err := b.Faults.ServiceAccountKubeconfig(ctx, labctl.AuditedServiceAccount, grants)
	if err != nil {
		return nil, err
	}
	b.Logf("vpn-trace on the broken lab x%d", b.Runs)
	trace, err := b.measureCommand(ctx, "vpn-trace -n vpn --from-client (ip_forward=0)", true,
		[]string{"vpn-trace", "-n", "vpn", "--from-client", "--kubeconfig", kc, "-o", "json"}, 1)
	if err != nil {
		return nil, err
	}
	b.Logf("doctor with helper pods x%d", b.Runs)
	full, err := b.measureCommand(ctx, "doctor, helper pods included (admin)", false,
		[]string{"doctor", "--kubeconfig", b.Layout.AdminKubeconfig(), "--ca-file", b.Layout.CAFile(), "-o", "json"}, 0)
	if err != nil {
		return nil, err
	}
	return []CommandRow{trace, full}, nil
}
