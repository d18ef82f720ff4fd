// Command monitor-demo produces the README's monitor section from the lab: it runs `kubectl
// lanaccess monitor` on the laptop (the lab's LAN machine) as the shipped read-only RBAC, a
// real Prometheus beside it loading the shipped alert rules, and walks the lab through a
// scenario (healthy; a node's link cut; back; an address dropped from the zone; back). It keeps
// what the README shows: a /metrics excerpt, the monitor's log, the alerts Prometheus fired,
// and the shipped Grafana dashboard drawn as SVG with the data Prometheus recorded.
//
//	go run ./lab/cmd/monitor-demo -out /tmp/monitor-demo [-prometheus PATH] [-plugin bin/kubectl-lanaccess]
//	go run ./lab/cmd/monitor-demo -out /tmp/monitor-demo -redraw   # the picture again, from the kept data
//
// It needs root and a lab (`lab up`); what it changes is taken back on the way out, Ctrl-C too.
// -redraw needs neither: it serves the recorded data with Prometheus on loopback and draws the
// dashboard again (after a change to the dashboard or the renderer).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/bench"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/dashrender"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/faults"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/labctl"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/pkg/manifests"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "monitor-demo:", err)
		os.Exit(1)
	}
}

type options struct {
	out, plugin, prometheus string
	interval, phase         time.Duration
	redraw                  bool
}

func run(ctx context.Context) (err error) {
	var o options
	cache, _ := os.UserCacheDir()
	flag.StringVar(&o.out, "out", "", "directory for what the README shows (created)")
	flag.StringVar(&o.plugin, "plugin", "bin/kubectl-lanaccess", "the plugin binary (`make build`)")
	flag.StringVar(&o.prometheus, "prometheus", filepath.Join(cache, "kubectl-lanaccess", "tools", "prometheus-v0.316.0", "prometheus"),
		"a Prometheus server binary (go install github.com/prometheus/prometheus/cmd/prometheus@v0.316.0)")
	flag.DurationVar(&o.interval, "interval", 5*time.Second, "the monitor's --interval and Prometheus' scrape interval")
	flag.DurationVar(&o.phase, "phase", 150*time.Second, "how long each fault lasts (alerts wait 2 minutes)")
	flag.BoolVar(&o.redraw, "redraw", false, "draw the dashboard again from the data a previous run kept in -out")
	flag.Parse()
	if o.out == "" {
		return errors.New("-out is required")
	}
	if o.redraw {
		return redraw(ctx, o)
	}
	if o.plugin, err = filepath.Abs(o.plugin); err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
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
	cfg, err := clientcmd.BuildConfigFromFlags("", l.AdminKubeconfig())
	if err != nil {
		return err
	}
	cfg.WarningHandler = rest.NoWarnings{}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	b := &bench.Bench{Layout: l, Client: client, Faults: faults.Lab{Layout: l, Client: client}, Log: os.Stderr}
	defer func() { err = errors.Join(err, b.UndoAll()) }()
	d := &demo{o: o, b: b, l: l}
	return d.run(ctx)
}

type demo struct {
	o        options
	b        *bench.Bench
	l        layout.Layout
	start    time.Time
	timeline []string
}

func (d *demo) mark(format string, a ...any) {
	line := fmt.Sprintf("%s  +%3.0fs  %s", time.Now().UTC().Format("15:04:05"), time.Since(d.start).Seconds(), fmt.Sprintf(format, a...))
	d.timeline = append(d.timeline, line)
	d.b.Logf("%s", line)
}

func (d *demo) run(ctx context.Context) error {
	listen, promListen := d.l.Laptop.LANIP+":9877", d.l.Laptop.LANIP+":9090"
	if err := d.startMonitor(ctx, listen); err != nil {
		return err
	}
	if err := d.startPrometheus(promListen, "http://"+listen); err != nil {
		return err
	}
	prom := dashrender.Prometheus{URL: "http://" + promListen}
	keep := func(what string) error {
		return errors.Join(d.save("metrics-"+what+".txt", "http://"+listen+"/metrics"), d.save("alerts-"+what+".json", prom.URL+"/api/v1/alerts"))
	}
	if err := d.wait(ctx, 2*time.Minute); err != nil {
		return err
	}
	if err := d.linkDown(ctx, keep); err != nil {
		return err
	}
	if err := d.dropFromZone(ctx, keep); err != nil {
		return err
	}
	end := time.Now()
	d.mark("drawing the dashboard")
	if err := d.render(ctx, prom, d.start, end); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d.o.out, "timeline.txt"), []byte(strings.Join(d.timeline, "\n")+"\n"), 0o600)
}

// startMonitor runs the monitor on the laptop as a ServiceAccount bound to the shipped
// read-only RBAC, its log into out/monitor.log.
func (d *demo) startMonitor(ctx context.Context, listen string) error {
	grants, err := faults.ManifestGrants("rbac-doctor")
	if err != nil {
		return err
	}
	kubeconfig, err := d.b.Faults.ServiceAccountKubeconfig(ctx, "lanaccess-monitor-demo", grants)
	d.b.Defer("demo ServiceAccount", func(ctx context.Context) error { return d.b.Faults.DeleteServiceAccount(ctx, "lanaccess-monitor-demo") })
	if err != nil {
		return err
	}
	monLog, err := os.Create(filepath.Join(d.o.out, "monitor.log"))
	if err != nil {
		return err
	}
	d.b.Defer("monitor log", func(context.Context) error { return monLog.Close() })
	mon := exec.Command("ip", "netns", "exec", d.l.Laptop.NS, d.o.plugin, "monitor", "--kubeconfig", kubeconfig, //nolint:gosec // the plugin under demonstration
		"--ca-file", d.l.CAFile(), "--interval", d.o.interval.String(), "--timeout", "1s", "--listen", listen)
	mon.Stderr = monLog
	if err := startUntilStopped(d.b, "monitor", mon); err != nil {
		return err
	}
	d.start = time.Now()
	d.mark("monitor started on the laptop (%s), as the shipped rbac-doctor ServiceAccount", listen)
	return nil
}

// linkDown cuts the link of a node that runs none of the Services' pods for one phase, keeps
// what the monitor and Prometheus say just before it comes back, then waits a minute.
func (d *demo) linkDown(ctx context.Context, keep func(string) error) error {
	dead, err := d.b.NodeWithoutServicePods(ctx)
	if err != nil {
		return err
	}
	node, err := d.l.Node(dead)
	if err != nil {
		return err
	}
	d.mark("link of %s (%s) down", dead, node.LANIP)
	if err := d.b.Faults.SetLink(ctx, dead, false); err != nil {
		return err
	}
	d.b.Defer("link of "+dead, func(ctx context.Context) error { return d.b.Faults.SetLink(ctx, dead, true) })
	if err := d.wait(ctx, d.o.phase-15*time.Second); err != nil {
		return err
	}
	if err := keep("link-down"); err != nil {
		return err
	}
	if err := d.wait(ctx, 15*time.Second); err != nil {
		return err
	}
	d.mark("link of %s up", dead)
	if err := d.b.Faults.SetLink(ctx, dead, true); err != nil {
		return err
	}
	return d.wait(ctx, time.Minute)
}

// dropFromZone removes 10.0.10.13 from the zone's template for one phase, keeps what the
// monitor and Prometheus say, restores it and waits a minute.
func (d *demo) dropFromZone(ctx context.Context, keep func(string) error) error {
	drop := regexp.MustCompile(`\n[^\n]*IN A 10\.0\.10\.13"`)
	d.mark("10.0.10.13 dropped from the zone's template (ConfigMap traefik/lan-dns)")
	prev, err := d.b.Faults.EditConfigMap(ctx, "traefik", "lan-dns", "Corefile", func(s string) string { return drop.ReplaceAllString(s, "") })
	if err != nil {
		return err
	}
	restore := func(ctx context.Context) error {
		return d.b.Faults.SetConfigMapKey(ctx, "traefik", "lan-dns", "Corefile", prev)
	}
	d.b.Defer("the zone's template", restore)
	if err := d.wait(ctx, d.o.phase); err != nil {
		return err
	}
	if err := keep("drift"); err != nil {
		return err
	}
	d.mark("the zone's template restored")
	if err := restore(ctx); err != nil {
		return err
	}
	return d.wait(ctx, time.Minute)
}

// startPrometheus runs Prometheus in the laptop namespace, scraping the monitor as the job the
// rules expect and loading the shipped rules.
func (d *demo) startPrometheus(listen, target string) error {
	dir := filepath.Join(d.o.out, "prometheus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rules, err := manifests.Get("monitor-rules")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600); err != nil {
		return err
	}
	conf := fmt.Sprintf(`global:
  scrape_interval: %s
  evaluation_interval: %s
rule_files: [rules.yaml]
scrape_configs:
  - job_name: lanaccess-monitor
    static_configs:
      - targets: [%q]
`, d.o.interval, d.o.interval, strings.TrimPrefix(target, "http://"))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(conf), 0o600); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command("ip", "netns", "exec", d.l.Laptop.NS, d.o.prometheus, "--config.file="+filepath.Join(dir, "prometheus.yml"), //nolint:gosec // -prometheus: the server the demo runs
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+listen)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := startUntilStopped(d.b, "prometheus", cmd); err != nil {
		return err
	}
	d.mark("Prometheus %s scraping the monitor every %s with the shipped rules", listen, d.o.interval)
	return nil
}

// startUntilStopped starts cmd and records its SIGTERM as an undo step.
func startUntilStopped(b *bench.Bench, what string, cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	b.Defer(what, func(context.Context) error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			return fmt.Errorf("%s did not stop within 20s of SIGTERM", what)
		}
	})
	return nil
}

func (d *demo) wait(ctx context.Context, dur time.Duration) error {
	select {
	case <-time.After(dur):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// save writes what url answers into out/name.
func (d *demo) save(name, url string) error {
	resp, err := http.Get(url) //nolint:gosec // the lab's own addresses
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d.o.out, name), body, 0o600)
}

// render draws the shipped dashboard over the scenario, one row per address Prometheus knows.
func (d *demo) render(ctx context.Context, prom dashrender.Prometheus, start, end time.Time) error {
	instance := d.l.Laptop.LANIP + ":9877"
	addrs, err := prom.Instant(ctx, `group by (address) (lanaccess_probe_success{instance="`+instance+`"})`, end)
	if err != nil {
		return err
	}
	var values []string
	for _, s := range addrs {
		values = append(values, s.Labels["address"])
	}
	summary, _ := json.Marshal(drawn{Start: start.UTC(), End: end.UTC(), Instance: instance, Addresses: values, Interval: d.o.interval.String()})
	if err := os.WriteFile(filepath.Join(d.o.out, "dashboard.json"), summary, 0o600); err != nil {
		return err
	}
	return draw(ctx, d.o.out, prom, start, end, instance, values, d.o.interval)
}

// drawn is what a drawing needs to be made again: the range, the monitor, the addresses.
type drawn struct {
	Start, End time.Time
	Instance   string
	Addresses  []string
	Interval   string
}

// draw renders the shipped dashboard into out/dashboard.svg.
func draw(ctx context.Context, out string, prom dashrender.Prometheus, start, end time.Time, instance string, values []string, interval time.Duration) error {
	raw, err := manifests.Get("monitor-dashboard")
	if err != nil {
		return err
	}
	dash, err := dashrender.Parse(raw)
	if err != nil {
		return err
	}
	svg, err := dashrender.Render(ctx, dash, prom, dashrender.Options{
		Start: start, End: end, Step: interval,
		Vars:    map[string]string{"instance": instance, "__rate_interval": "30s", "datasource": "prometheus"},
		Repeats: map[string][]string{"address": values},
		Subtitle: fmt.Sprintf("lab, %s-%s UTC: healthy; a node's link cut; back; 10.0.10.13 dropped from the zone; back (kubectl lanaccess monitor, Prometheus %s scrapes)",
			start.UTC().Format("2006-01-02 15:04"), end.UTC().Format("15:04"), interval),
	})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "dashboard.svg"), []byte(svg), 0o600)
}

// redraw serves the TSDB a previous run kept with Prometheus on loopback (no scraping) and
// draws the dashboard again over the same range.
func redraw(ctx context.Context, o options) error {
	raw, err := os.ReadFile(filepath.Join(o.out, "dashboard.json"))
	if err != nil {
		return err
	}
	var dr drawn
	if err := json.Unmarshal(raw, &dr); err != nil {
		return err
	}
	interval, err := time.ParseDuration(dr.Interval)
	if err != nil {
		return err
	}
	dir := filepath.Join(o.out, "prometheus")
	conf := filepath.Join(dir, "redraw.yml")
	if err := os.WriteFile(conf, []byte("global:\n  scrape_interval: 1h\n"), 0o600); err != nil {
		return err
	}
	const listen = "127.0.0.1:19090"
	cmd := exec.Command(o.prometheus, "--config.file="+conf, //nolint:gosec // -prometheus: the server the demo runs "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+listen, "--storage.tsdb.retention.time=10y")
	b := &bench.Bench{Log: os.Stderr}
	defer func() { _ = b.UndoAll() }()
	if err := startUntilStopped(b, "prometheus", cmd); err != nil {
		return err
	}
	prom := dashrender.Prometheus{URL: "http://" + listen}
	err = faults.Poll(ctx, time.Minute, func() error {
		_, err := prom.Instant(ctx, "vector(1)", dr.End)
		return err
	})
	if err != nil {
		return err
	}
	return draw(ctx, o.out, prom, dr.Start, dr.End, dr.Instance, dr.Addresses, interval)
}
