// Command bench measures doctor on the lab against the seed's manual procedure, at 3 and 30
// addresses, with a dead address and on a loaded cluster, the plugin's start-up, vpn-trace on
// the broken lab and the full doctor (helper pods included), and the
// monitor (one run's cost, memory after 1,000 runs, the scrape time with 30 addresses), and
// prints one table (`make bench`). It needs root and a lab (`lab up`); everything it changes
// in the lab is taken back on the way out, also on Ctrl-C.
//
//	go run ./lab/cmd/bench [-runs 5] [-skip dead,many,scale,startup,monitor,commands] [-json FILE]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/bench"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/faults"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/labctl"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type options struct {
	runs, deadManualRuns, startupRuns int
	monitorRuns, monitorScrapes       int
	monitorInterval                   time.Duration
	addresses                         int
	load                              bench.Load
	plugin, jsonFile                  string
	skip                              map[string]bool
	hold                              string
}

func parseFlags() (options, error) {
	var o options
	var skip string
	flag.IntVar(&o.runs, "runs", 5, "measured runs of doctor and of the script per scenario (after one warm-up)")
	flag.IntVar(&o.deadManualRuns, "dead-manual-runs", 3, "runs of the script with a dead address (each waits dig's 3 x 5 s per query there)")
	flag.IntVar(&o.startupRuns, "startup-runs", 30, "runs of `version`")
	flag.IntVar(&o.addresses, "addresses", 30, "node addresses of the many-addresses scenario")
	flag.IntVar(&o.load.Services, "services", 2000, "Services of the loaded cluster")
	flag.IntVar(&o.load.Pods, "pods", 10000, "pods of the loaded cluster")
	flag.IntVar(&o.load.Namespaces, "namespaces", 20, "namespaces the load spreads over (the first is the setup's own)")
	flag.StringVar(&o.plugin, "plugin", "bin/kubectl-lanaccess", "the plugin binary (`make build`)")
	flag.StringVar(&o.jsonFile, "json", "", "also write the measurements as JSON to this file")
	flag.StringVar(&o.hold, "hold", "", "only set one scenario up, healthy (the audited identity and the LAN resolver), many (-addresses addresses) or scale (the load), and keep it until Ctrl-C (to reproduce or profile by hand)")
	flag.IntVar(&o.monitorRuns, "monitor-runs", 1000, "runs of the monitor at -monitor-interval (its memory after 10 runs and after these)")
	flag.DurationVar(&o.monitorInterval, "monitor-interval", 100*time.Millisecond, "the monitor's --interval for -monitor-runs")
	flag.IntVar(&o.monitorScrapes, "monitor-scrapes", 50, "scrapes of the monitor's /metrics with -addresses addresses (in the many scenario)")
	flag.StringVar(&skip, "skip", "", "scenarios to leave out: dead, many, scale, startup, monitor, commands (comma-separated)")
	flag.Parse()
	o.skip = map[string]bool{}
	for s := range strings.SplitSeq(skip, ",") {
		if s = strings.TrimSpace(s); s != "" {
			if !slices.Contains([]string{"dead", "many", "scale", "startup", "monitor", "commands"}, s) {
				return o, fmt.Errorf("-skip %s: not a scenario (dead, many, scale, startup, monitor, commands)", s)
			}
			o.skip[s] = true
		}
	}
	if o.runs < 1 || o.startupRuns < 1 {
		return o, errors.New("-runs and -startup-runs must be at least 1")
	}
	if o.monitorRuns < 20 || o.monitorScrapes < 1 {
		return o, errors.New("-monitor-runs must be at least 20 (memory is compared with that after 10), -monitor-scrapes at least 1")
	}
	p, err := filepath.Abs(o.plugin)
	if err != nil {
		return o, err
	}
	if _, err := os.Stat(p); err != nil {
		return o, fmt.Errorf("plugin binary: %w (run `make build` first)", err)
	}
	o.plugin = p
	return o, nil
}

func run(ctx context.Context) (err error) {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("the lab needs root (network namespaces)")
	}
	l := layout.Default()
	if os.Getenv(labctl.LockHeldEnv) == "" {
		unlock, err := labctl.LockLab(l, os.Stderr)
		if err != nil {
			return err
		}
		defer unlock()
	}
	if err := labctl.Healthy(ctx, l); err != nil {
		return fmt.Errorf("lab is not up (`make lab-up`): %w", err)
	}
	client, loader, err := clients(l)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "lanaccess-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	script, err := bench.WriteScript(tmp)
	if err != nil {
		return err
	}
	b := &bench.Bench{Layout: l, Client: client, Faults: faults.Lab{Layout: l, Client: client},
		Plugin: o.plugin, Script: script, Runs: o.runs, Log: os.Stderr, Hold: o.hold != ""}
	defer func() {
		if uerr := b.UndoAll(); uerr != nil {
			err = errors.Join(err, uerr)
		}
	}()
	if err := prepare(ctx, b); err != nil {
		return err
	}
	if o.hold != "" {
		return hold(ctx, b, o, loader)
	}
	rep, err := measure(ctx, b, o, loader)
	if err != nil {
		return err
	}
	if err := b.UndoAll(); err != nil {
		return err
	}
	return writeReport(rep, o)
}

// clients are the benchmark's admin client and a faster one that loads the cluster.
func clients(l layout.Layout) (client, loader kubernetes.Interface, err error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", l.AdminKubeconfig())
	if err != nil {
		return nil, nil, err
	}
	cfg.WarningHandler = rest.NoWarnings{}
	if client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, nil, err
	}
	loaderCfg := rest.CopyConfig(cfg)
	loaderCfg.QPS, loaderCfg.Burst = 200, 400
	loader, err = kubernetes.NewForConfig(loaderCfg)
	return client, loader, err
}

// prepare gives doctor the identity the apiserver audits, with exactly what the shipped
// read-only RBAC grants, and the laptop the LAN resolver; b undoes both.
func prepare(ctx context.Context, b *bench.Bench) error {
	user := "system:serviceaccount:" + labctl.AuditedServiceAccountNamespace + ":" + labctl.AuditedServiceAccount
	var err error
	if b.Audit, err = bench.NewAuditTail(labctl.AuditLogPath(b.Layout), user); err != nil {
		return err
	}
	grants, err := faults.ManifestGrants("rbac-doctor")
	if err != nil {
		return err
	}
	if b.Kubeconfig, err = b.Faults.ServiceAccountKubeconfig(ctx, labctl.AuditedServiceAccount, grants); err != nil {
		return err
	}
	b.Defer("benchmark ServiceAccount", func(ctx context.Context) error {
		return b.Faults.DeleteServiceAccount(ctx, labctl.AuditedServiceAccount)
	})
	return useLANResolver(b)
}

// hold sets up one scenario and keeps it until Ctrl-C (-hold), for measuring by hand.
func hold(ctx context.Context, b *bench.Bench, o options, loader kubernetes.Interface) error {
	var err error
	switch o.hold {
	case "healthy":
		b.Logf("holding the healthy lab: doctor's identity is %s", b.Kubeconfig)
		<-ctx.Done()
		return nil
	case "many":
		_, err = b.ManyAddresses(ctx, o.addresses)
	case "scale":
		_, err = b.Scaled(ctx, o.load, loader)
	default:
		return fmt.Errorf("-hold %s: healthy, many or scale", o.hold)
	}
	if ctx.Err() != nil {
		return nil // Ctrl-C: the deferred undo takes the lab back
	}
	return err
}

// measure runs every scenario that -skip leaves in.
func measure(ctx context.Context, b *bench.Bench, o options, loader kubernetes.Interface) (rep bench.Report, err error) {
	rep = bench.Report{Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Runs: o.runs, ProbeTimeout: 2 * time.Second, HopTimeout: 2 * time.Second,
		Machine: fmt.Sprintf("%d CPUs, %s/%s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH), LoadStart: loadAverage()}
	defer func() { rep.LoadEnd = loadAverage() }()
	if o.skip["startup"] {
		rep.Skipped = append(rep.Skipped, "start-up (-skip)")
	} else if rep.Startup, err = measureStartup(ctx, b, o); err != nil {
		return rep, err
	}
	if rep.Healthy, err = b.Healthy(ctx); err != nil {
		return rep, err
	}
	svcs, pods, err := bench.Counts(ctx, b.Client)
	if err != nil {
		return rep, err
	}
	rep.Small = bench.ScaleRowOf(rep.Healthy, svcs, pods)
	if o.skip["monitor"] {
		rep.Skipped = append(rep.Skipped, "monitor (-skip)")
	} else {
		if rep.Monitor, err = b.MonitorSoak(ctx, o.monitorInterval, 10, o.monitorRuns); err != nil {
			return rep, err
		}
		b.WithManyAddresses = func(ctx context.Context, addrs []string) (err error) {
			rep.Scrape, err = b.MonitorScrape(ctx, addrs, o.monitorScrapes)
			return err
		}
	}
	if o.skip["dead"] {
		rep.Skipped = append(rep.Skipped, "dead address (-skip)")
	} else if rep.Dead, rep.DeadNode, err = b.DeadAddress(ctx, o.deadManualRuns); err != nil {
		return rep, err
	}
	if o.skip["many"] {
		rep.Skipped = append(rep.Skipped, fmt.Sprintf("%d addresses (-skip)", o.addresses))
	} else if rep.Many, err = b.ManyAddresses(ctx, o.addresses); err != nil {
		return rep, err
	}
	if o.skip["scale"] {
		rep.Skipped = append(rep.Skipped, "loaded cluster (-skip)")
	} else if rep.Loaded, err = b.Scaled(ctx, o.load, loader); err != nil {
		return rep, err
	}
	// Last: it gives the audited ServiceAccount vpn-trace's opt-in grants as well.
	if o.skip["commands"] {
		rep.Skipped = append(rep.Skipped, "vpn-trace and the full doctor (-skip)")
	} else if rep.Commands, err = b.Commands(ctx); err != nil {
		return rep, err
	}
	return rep, nil
}

// loadAverage is the machine's 1-minute load average (/proc/loadavg; 0 when unreadable).
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var load float64
	if _, err := fmt.Sscan(string(data), &load); err != nil {
		return 0
	}
	return load
}

func measureStartup(ctx context.Context, b *bench.Bench, o options) (bench.Startup, error) {
	b.Logf("start-up: version x%d", o.startupRuns)
	st, err := bench.MeasureStartup(ctx, o.plugin, o.startupRuns)
	if err != nil {
		return st, err
	}
	if fi, err := os.Stat(o.plugin); err == nil {
		st.BinaryMB = float64(fi.Size()) / (1 << 20)
	}
	return st, nil
}

// writeReport prints the table and, with -json, writes the report as JSON.
func writeReport(rep bench.Report, o options) error {
	if err := rep.WriteTable(os.Stdout); err != nil {
		return err
	}
	if o.jsonFile == "" {
		return nil
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(o.jsonFile, data, 0o644) //nolint:gosec // a report for people (often read as another user than the root that ran the bench); nothing secret
}

// useLANResolver points the laptop's system resolver at the node addresses, as the seed's
// client configuration does for the zone (nmcli, NRPT, /etc/resolver): doctor's LA402 then
// learns at once that this machine uses the LAN DNS, instead of waiting on the lab's (broken
// by default) VPN tunnel to the public DNS. The lab's own file comes back afterwards.
func useLANResolver(b *bench.Bench) error {
	path := filepath.Join("/etc/netns", b.Layout.Laptop.NS, "resolv.conf")
	prev, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var conf strings.Builder
	conf.WriteString("# written by kubectl-lanaccess bench (the seed's LAN client configuration)\n")
	for _, n := range b.Layout.SeedNodes() {
		fmt.Fprintf(&conf, "nameserver %s\n", n.LANIP)
	}
	if err := os.WriteFile(path, []byte(conf.String()), 0o644); err != nil { //nolint:gosec // resolv.conf: every process in the namespace reads it, whatever its user
		return err
	}
	b.Defer("laptop resolver", func(context.Context) error {
		return os.WriteFile(path, prev, 0o644) //nolint:gosec // resolv.conf, as above
	})
	return nil
}
