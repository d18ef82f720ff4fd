package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	goruntime "runtime"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/checks"
	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/checks/config"
	"github.com/lanaccess/kubectl-lanaccess/checks/netpath"
	"github.com/lanaccess/kubectl-lanaccess/checks/workstation"
	"github.com/lanaccess/kubectl-lanaccess/cmd/kubectl-lanaccess/internal/flagpath"
	"github.com/lanaccess/kubectl-lanaccess/cmd/kubectl-lanaccess/internal/monitor"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
	ws "github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// monitorDoctorFlags are doctor's flags that mean the same for the monitor: where the setup
// comes from (the cluster, or --addresses and --zone) and what the path checks expect. They are
// doctor's own flag definitions, shared, not copies.
var monitorDoctorFlags = []string{
	"addresses", "zone", "host", "outside-name", "expect-status", "expect-location", "insecure", "ca-file",
	"timeout", "config", "proxy-service", "dns-service", "configmap", "all-namespaces",
}

// MonitorFlags is the raw input of `monitor`.
type MonitorFlags struct {
	Doctor       *DoctorFlags
	Only, Skip   []string
	Interval     time.Duration
	RunTimeout   time.Duration
	Listen       string
	Workstation  bool
	MaxAddresses int
	WebConfig    string
}

// NewMonitorFlags returns the defaults.
func NewMonitorFlags() *MonitorFlags {
	return &MonitorFlags{Doctor: NewDoctorFlags(), Interval: 30 * time.Second, RunTimeout: 25 * time.Second,
		Listen: "127.0.0.1:9877", MaxAddresses: monitor.DefaultMaxAddresses}
}

// AddFlags registers the monitor's flags.
func (f *MonitorFlags) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	doctor := &cobra.Command{}
	f.Doctor.AddFlags(doctor)
	for _, name := range monitorDoctorFlags {
		fs.AddFlag(doctor.Flags().Lookup(name))
	}
	fs.StringSliceVar(&f.Only, "only", nil, "run only these check IDs or ID prefixes (e.g. LA3,LA4)")
	fs.StringSliceVar(&f.Skip, "skip", nil, "skip these check IDs or prefixes, or silence these finding codes")
	fs.DurationVar(&f.Interval, "interval", f.Interval, "time between the starts of two runs (jittered by up to 10% either way; runs never overlap)")
	fs.DurationVar(&f.RunTimeout, "run-timeout", f.RunTimeout, "deadline of one run (each probe is bounded by --timeout within it)")
	fs.StringVar(&f.Listen, "listen", f.Listen, "address to serve /metrics and /healthz on (e.g. :9877 for a remote Prometheus)")
	fs.BoolVar(&f.Workstation, "workstation", false, "also run client-check's checks (WS001-WS004): this machine's own resolver")
	fs.StringVar(&f.WebConfig, "web-config-file", "", "TLS and basic auth for /metrics and /healthz: the Prometheus exporters' web configuration file (prometheus.io: configuration/https); without it, plain HTTP")
	fs.IntVar(&f.MaxAddresses, "max-addresses", f.MaxAddresses, "addresses that carry per-address metric labels (more are still checked, counted in lanaccess_monitor_addresses_unlabelled)")
}

// monitorOptions is the monitor's validated input.
type monitorOptions struct {
	doctor      *DoctorOptions
	cfg         monitor.Config
	listen      string
	workstation bool
	clients     *clients // nil with --addresses
}

// minInterval keeps a typo (--interval 30ms) from turning the monitor into a load generator;
// the benchmark runs at this pace.
const minInterval = 100 * time.Millisecond

// ToOptions completes the flags (--config) and validates them; a bad configuration exits 2
// before anything is served. With cluster access the kubeconfig is read here too.
func (f *MonitorFlags) ToOptions(cmd *cobra.Command, kubeFlags *kubeFlags, connect clientFactory) (*monitorOptions, error) {
	d, err := f.Doctor.ToOptions(cmd, kubeFlags, connect)
	if err != nil {
		return nil, err
	}
	switch {
	case f.Interval < minInterval:
		return nil, usageErr("--interval %s: at least %s", f.Interval, minInterval)
	case f.RunTimeout < d.Checks.Timeout:
		return nil, usageErr("--run-timeout %s is shorter than one probe (--timeout %s)", f.RunTimeout, d.Checks.Timeout)
	case f.MaxAddresses < 1 || f.MaxAddresses > 1000:
		return nil, usageErr("--max-addresses %d: between 1 and 1000", f.MaxAddresses)
	}
	if _, _, err := net.SplitHostPort(f.Listen); err != nil {
		return nil, usageErr("invalid --listen %q: %v (e.g. 127.0.0.1:9877 or :9877)", f.Listen, err)
	}
	if err := validateSelection(f.Only, f.Skip, f.Workstation); err != nil {
		return nil, err
	}
	if f.WebConfig != "" {
		if err := web.Validate(f.WebConfig); err != nil {
			return nil, usageErr("--web-config-file %s: %v", f.WebConfig, err)
		}
	}
	if d.Offline != nil && len(d.Offline.ProxyAddrs) > f.MaxAddresses {
		return nil, usageErr("--addresses lists %d addresses, more than --max-addresses %d: raise it or split the monitor", len(d.Offline.ProxyAddrs), f.MaxAddresses)
	}
	o := &monitorOptions{doctor: d, listen: f.Listen, workstation: f.Workstation, cfg: monitor.Config{
		Interval: f.Interval, Jitter: 0.1, RunTimeout: f.RunTimeout, Probes: d.Probes,
		Only: f.Only, Skip: f.Skip, MaxAddresses: f.MaxAddresses, WebConfigFile: f.WebConfig, Version: version.Get(),
	}}
	if d.Offline == nil {
		if o.clients, err = connect(kubeFlags, 10*time.Second); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// validateSelection checks --only and --skip against the checks the monitor may run.
func validateSelection(only, skip []string, withWorkstation bool) error {
	commands := []string{catalogue.Doctor}
	if withWorkstation {
		commands = append(commands, catalogue.ClientCheck)
	}
	var cs []engine.Check
	for _, cmd := range commands {
		for _, e := range catalogue.ForCommand(cmd) {
			if e.Section != catalogue.NodeListeners {
				cs = append(cs, engine.Check{ID: e.ID, Codes: e.CodeStrings()})
			}
		}
	}
	if err := (&engine.Runner{Checks: cs, Only: only, Skip: skip}).Validate(); err != nil {
		return usageErr("%v", err)
	}
	return nil
}

// Run serves until ctx ends (SIGTERM or SIGINT): exit 0. A named object that does not exist,
// or a --listen address that cannot be bound, exits 2 before serving.
func (o *monitorOptions) Run(ctx context.Context, streams genericiooptions.IOStreams) error {
	log := slog.New(slog.NewJSONHandler(streams.ErrOut, nil))
	o.cfg.Log = log
	src, describe, err := o.source(ctx, log)
	if err != nil {
		return err
	}
	m, err := monitor.New(o.cfg, src)
	if err != nil {
		return usageErr("%v", err)
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return usageErr("--listen %s: %v", o.listen, err)
	}
	log.LogAttrs(ctx, slog.LevelInfo, "monitor started", slog.String("listen", ln.Addr().String()), slog.String("interval", o.cfg.Interval.String()),
		slog.String("timeout", o.doctor.Checks.Timeout.String()), slog.String("setup", describe), slog.Bool("workstation", o.workstation),
		slog.String("version", o.cfg.Version.Version))
	err = m.Serve(ctx, ln)
	log.LogAttrs(context.Background(), slog.LevelInfo, "monitor stopped", slog.Any("error", err))
	if err != nil {
		return &ExitError{Code: ExitUnevaluated, Err: err}
	}
	return nil
}

// source is where each run's checks come from: the flags' path, or the cluster's setup read
// again every run. With the cluster, a first read before serving tells a named object that does
// not exist (exit 2) from a cluster that does not answer now (logged; the runs keep trying).
func (o *monitorOptions) source(ctx context.Context, log *slog.Logger) (monitor.Source, string, error) {
	var wsOpts *monitorWorkstation
	if o.workstation {
		wsOpts = &monitorWorkstation{timeout: o.doctor.Checks.Timeout, outside: o.doctor.Path.OutsideName}
	}
	if p := o.doctor.Offline; p != nil {
		return &offlineMonitorSource{path: *p, opts: o.doctor.Path, ws: wsOpts}, flagpath.Source, nil
	}
	src := &clusterMonitorSource{clients: o.clients, sel: o.doctor.Selection, opts: o.doctor.Path, ws: wsOpts}
	src.sel.KubeconfigNamespace = o.clients.namespace
	first, cancel := context.WithTimeout(ctx, o.cfg.RunTimeout)
	defer cancel()
	if _, err := kube.Discover(first, src.clients.typed, src.clients.dynamic, src.sel); err != nil {
		if kube.IsUsage(err) {
			return nil, "", err
		}
		log.LogAttrs(ctx, slog.LevelWarn, "the cluster could not be read at start; every run tries again", slog.String("error", err.Error()))
	}
	return src, fmt.Sprintf("cluster %s (context %s)", o.clients.cluster.Server, o.clients.cluster.Context), nil
}

// offlineMonitorSource runs the path checks on the flags' addresses.
type offlineMonitorSource struct {
	path netpath.Path
	opts netpath.Options
	ws   *monitorWorkstation
}

func (s *offlineMonitorSource) Prepare(_ context.Context, probes netpath.Prober) (monitor.Round, error) {
	cs := checks.Doctor(checks.DoctorEnv{Path: &netpath.Env{Path: s.path, Probes: probes, Options: s.opts}})
	return monitor.Round{Checks: append(cs, s.ws.checks(s.path)...), Path: s.path}, nil
}

// clusterMonitorSource reads the setup again each run (an address changed by a DHCP lease, an
// edited Service) and runs the configuration checks beside the path checks. The node listener
// check is left out: a monitor creates no pods.
type clusterMonitorSource struct {
	clients *clients
	sel     kube.Selection
	opts    netpath.Options
	ws      *monitorWorkstation
}

func (s *clusterMonitorSource) Prepare(ctx context.Context, probes netpath.Prober) (monitor.Round, error) {
	c := s.clients
	setup, err := kube.Discover(ctx, c.typed, c.dynamic, s.sel)
	if err != nil {
		return monitor.Round{}, fmt.Errorf("could not read the cluster at %s (context %s): %w", c.cluster.Server, c.cluster.Context, err)
	}
	setup.APIWarnings = append(setup.APIWarnings, c.warnings.Warnings()...)
	path := netpath.PathFromSetup(setup)
	cs := checks.Doctor(checks.DoctorEnv{
		Config: &config.Env{Setup: setup, Access: kube.NewAccessReviewer(c.typed).Knowing(c.reads.Listed), NoHelpers: true},
		Path:   &netpath.Env{Path: path, Probes: probes, Options: s.opts},
	})
	return monitor.Round{Checks: append(cs, s.ws.checks(path)...), Path: path}, nil
}

// monitorWorkstation runs client-check's checks (--workstation) on the run's path: this
// machine's resolver must send the zone to the path's DNS addresses. Nil runs none.
type monitorWorkstation struct {
	timeout time.Duration
	outside string
}

func (w *monitorWorkstation) checks(p netpath.Path) []engine.Check {
	if w == nil || p.Zone.IsZero() {
		return nil
	}
	var servers []netip.Addr
	for _, t := range p.DNS {
		servers = append(servers, t.Addr.Addr())
	}
	osName, err := ws.ParseOS(goruntime.GOOS)
	if err != nil {
		osName = ws.OS(goruntime.GOOS)
	}
	label := make([]byte, 4)
	_, _ = rand.Read(label) // crypto/rand.Read never fails
	env := workstation.Env{
		Target: ws.Target{Zone: p.Zone, Servers: probe.SortAddrs(servers), Answers: p.ProxyAddrs}, OS: osName,
		ProbeName: "lanaccess-" + hex.EncodeToString(label) + "." + p.Zone.String(), OutsideName: w.outside, DNSPort: 53,
		Timeout: w.timeout, Resolver: net.DefaultResolver, DNS: &probe.DNSClient{Timeout: w.timeout},
		Commands: ws.ExecRunner{}, ReadFile: os.ReadFile,
	}
	return checks.ClientCheck(env)
}

func newMonitorCommand(kubeFlags *kubeFlags, streams genericiooptions.IOStreams, connect clientFactory) *cobra.Command {
	return newRunCommand(runCommand{
		Use:   "monitor",
		Short: "Run doctor's path checks on an interval, with metrics",
		Long: `monitor runs on a machine of the LAN (a workstation, a small always-on box, a VM outside
the cluster: from a pod, kube-proxy captures the externalIPs on the pod's own node, so the probes
would prove nothing). Every interval it runs the DNS and HTTPS path checks on every node address
(with cluster access, also the configuration checks, the setup read again each run; with
--workstation, client-check's checks of this machine's resolver), serves the results on /metrics
for Prometheus and /healthz, and logs one JSON line each time a check or an address changes
state. SIGTERM or SIGINT stops it cleanly. ` + "`kubectl lanaccess manifests`" + ` prints the alert rules, the
Grafana dashboard and a systemd unit that go with it.`,
		Example: `  # without cluster access: the seed's three node addresses and the zone
  kubectl lanaccess monitor --addresses 10.0.10.11,10.0.10.12,10.0.10.13 \
    --zone apps.example.com --host grafana.apps.example.com

  # with cluster access, scraped by a remote Prometheus
  kubectl lanaccess monitor --listen :9877 --ca-file ca.pem

  # the same settings from a file (keys are the long flag names)
  kubectl lanaccess monitor --config /etc/kubectl-lanaccess/monitor.yaml`,
		Catalogue: catalogue.Doctor,
	}, NewMonitorFlags(), kubeFlags, streams, connect)
}
