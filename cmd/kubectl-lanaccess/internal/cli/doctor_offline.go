package cli

import (
	"context"
	"fmt"

	"github.com/lanaccess/kubectl-lanaccess/checks"
	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/checks/netpath"
	"github.com/lanaccess/kubectl-lanaccess/cmd/kubectl-lanaccess/internal/flagpath"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/replay"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
)

// offlinePath reads doctor without cluster access: with --addresses, the path comes from the
// flags and the cluster is never read (no kubeconfig needed); without, it returns nil and the
// setup is discovered as usual. Flags that name cluster objects make no sense beside it.
func (f *DoctorFlags) offlinePath() (*netpath.Path, error) {
	if len(f.Addresses) == 0 {
		return nil, nil
	}
	for flag, set := range map[string]bool{"--proxy-service": f.ProxyService != "", "--dns-service": f.DNSService != "", "--configmap": f.ConfigMap != "", "--all-namespaces": f.AllNamespaces} {
		if set {
			return nil, usageErr("--addresses describes the setup without reading the cluster; %s names what to read from it: give one or the other", flag)
		}
	}
	zone, host, err := offlineZoneAndHost(f.Zone, f.Host)
	if err != nil {
		return nil, err
	}
	addrs, err := flagpath.ParseAddresses(f.Addresses)
	if err != nil {
		return nil, usageErr("invalid --addresses: %v", err)
	}
	p := flagpath.FromAddresses(addrs, zone, host)
	return &p, nil
}

// prepareOffline runs the DNS and HTTPS path checks on the given addresses; every check that
// reads the cluster is a SKIP that says so.
func (o *DoctorOptions) prepareOffline() (attempt, error) {
	o.Checks.tape.begin(replay.Cluster{})
	set, err := probe.NewSet(o.Checks.tape.probes(o.Probes))
	if err != nil {
		return attempt{}, usageErr("--ca-file %s: %v (give a PEM file of CA certificates)", o.Probes.CAFile, err)
	}
	env := &netpath.Env{Path: *o.Offline, Probes: set, Options: o.Path}
	a := attempt{Cleanup: set.Close, Header: report.Report{Subject: offlineSubject(o.Offline)}}
	a.Checks = withAPISkipped(checks.Doctor(checks.DoctorEnv{Path: env}))
	if !flagpath.HostGiven(*o.Offline) {
		a.Checks = withHTTPSSkippedWithoutHost(a.Checks, o.Offline.Zone.String())
	}
	return a, nil
}

// withHTTPSSkippedWithoutHost: without the API there is no route of the proxy to take the
// probe host from, and the zone apex, the only name left, is usually served by no route (the
// proxy answers 404 "no router matched"): a FAIL there would blame a healthy setup. The HTTPS
// path checks SKIP naming --host; the DNS path checks still judge the apex, which the zone's
// template answers like any name in it.
func withHTTPSSkippedWithoutHost(run []engine.Check, zone string) []engine.Check {
	out := make([]engine.Check, 0, len(run))
	for _, c := range run {
		if catalogue.Get(c.ID).Section == catalogue.HTTPSPath {
			c = catalogue.Check(c.ID, func(context.Context) engine.Outcome {
				return engine.Outcome{Skip: "needs --host: without the Kubernetes API there is no route to take the probe host from, and the zone apex " + zone + " is usually served by none; give a name a route serves, e.g. --host grafana." + zone}
			})
			c.DependsOn = nil
		}
		out = append(out, c)
	}
	return out
}

// withAPISkipped completes doctor's suite with a SKIP for every check it leaves out because
// it needs the API, in catalogue order.
func withAPISkipped(run []engine.Check) []engine.Check {
	have := map[string]engine.Check{}
	for _, c := range run {
		have[c.ID] = c
	}
	entries := catalogue.ForCommand(catalogue.Doctor)
	out := make([]engine.Check, 0, len(entries))
	for _, e := range entries {
		c, ok := have[e.ID]
		if !ok {
			c = catalogue.Check(e.ID, func(context.Context) engine.Outcome {
				return engine.Outcome{Skip: "needs the Kubernetes API: doctor runs without cluster access (--addresses)"}
			})
			c.DependsOn = nil // its own reason, not "upstream check LA001 skip"
		}
		out = append(out, c)
	}
	return out
}

func offlineSubject(p *netpath.Path) []report.KV {
	return []report.KV{
		{Key: "addresses", Value: probe.JoinAddrs(p.ProxyAddrs)},
		{Key: "zone", Value: p.Zone.String()},
		{Key: "probe host", Value: fmt.Sprintf("%s (%s)", p.Host.Name, p.Host.Source)},
		{Key: "from", Value: flagpath.Source},
	}
}
