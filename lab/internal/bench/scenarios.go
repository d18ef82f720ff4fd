package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/labctl"
)

// TimedPair is doctor and the manual script measured in one scenario.
type TimedPair struct {
	Addresses     int
	Doctor        Series // seconds
	DoctorRSS     Series // MB
	DoctorCPU     Series // seconds of user + system time
	LabCPU        Series // seconds of the lab's processes' CPU time during each doctor run
	Manual        Series // seconds
	DoctorFailing []string
	SlowestChecks string // of the last doctor run
	ManualFailed  string // the script's last line
	API           []APICounts
}

func (p *TimedPair) addDoctor(r DoctorRun) {
	p.Doctor = append(p.Doctor, r.Wall.Seconds())
	p.DoctorRSS = append(p.DoctorRSS, float64(r.MaxRSSKB)/1024)
	p.DoctorCPU = append(p.DoctorCPU, r.CPU.Seconds())
	p.LabCPU = append(p.LabCPU, r.LabCPU.Seconds())
	p.DoctorFailing = r.Report.Failing()
	p.SlowestChecks = r.Report.Slowest(4)
	p.API = append(p.API, r.API)
}

// measurePair runs doctor runs times and the script manualRuns times, after one unmeasured
// warm-up of each (of the script only where it is expected to pass) (first-run effects: page cache, ARP, the apiserver's caches). Doctor's exit
// code must be one of doctorCodes, the script's one of manualCodes: a run that did not
// diagnose what the scenario set up does not count.
func (b *Bench) measurePair(ctx context.Context, addrs []string, runs, manualRuns int, doctorCodes, manualCodes []int) (TimedPair, error) {
	p := TimedPair{Addresses: len(addrs)}
	if r, err := b.Doctor(ctx); err != nil {
		return p, err
	} else if err := wantExit("doctor (warm-up)", Sample{Code: r.Code}, doctorCodes...); err != nil {
		return p, fmt.Errorf("%w: %v\n%s", err, r.Report.Failing(), r.Report.Explain())
	}
	for range runs {
		r, err := b.Doctor(ctx)
		if err != nil {
			return p, err
		}
		if err := wantExit("doctor", Sample{Code: r.Code}, doctorCodes...); err != nil {
			return p, fmt.Errorf("%w: %v\n%s", err, r.Report.Failing(), r.Report.Explain())
		}
		p.addDoctor(r)
	}
	// The script's warm-up only where it passes: at a dead address a run costs about a minute
	// and nothing there warms up.
	if manualRuns > 0 && len(manualCodes) == 1 && manualCodes[0] == 0 {
		if _, err := b.Manual(ctx, addrs); err != nil {
			return p, err
		}
	}
	for range manualRuns {
		s, err := b.Manual(ctx, addrs)
		if err != nil {
			return p, err
		}
		if err := wantExit("manual check", s, manualCodes...); err != nil {
			return p, err
		}
		p.Manual = append(p.Manual, s.Wall.Seconds())
		p.ManualFailed = lastLine(s.Stdout)
	}
	return p, nil
}

// Healthy measures doctor and the script on the lab as it is (three node addresses).
func (b *Bench) Healthy(ctx context.Context) (TimedPair, error) {
	b.Logf("healthy lab: doctor x%d, manual check x%d", b.Runs, b.Runs)
	p, err := b.measurePair(ctx, b.seedAddrs(), b.Runs, b.Runs, []int{0}, []int{0})
	if err == nil && len(p.DoctorFailing) > 0 {
		err = fmt.Errorf("doctor on the healthy lab: %v", p.DoctorFailing)
	}
	return p, err
}

// DeadAddress cuts the LAN link of a node that carries an address but none of the Services'
// pods (with the proxy's node dead every address would fail, rightly) and measures both. The
// script's dig waits 3 x 5 s per query at a dead address, so it runs manualRuns times.
func (b *Bench) DeadAddress(ctx context.Context, manualRuns int) (TimedPair, string, error) {
	mark := len(b.undo)
	defer func() { _ = b.undoSince(mark) }()
	node, err := b.NodeWithoutServicePods(ctx)
	if err != nil {
		return TimedPair{}, "", err
	}
	b.Logf("one dead address: link of %s down; doctor x%d, manual check x%d", node, b.Runs, manualRuns)
	if err := b.Faults.SetLink(ctx, node, false); err != nil {
		return TimedPair{}, node, err
	}
	b.Defer("link of "+node, func(ctx context.Context) error {
		if err := b.Faults.SetLink(ctx, node, true); err != nil {
			return err
		}
		// The node went NotReady while cut off; the next scenario needs it Ready again.
		return poll(ctx, 2*time.Minute, func() error {
			n, err := b.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !labctl.NodeReady(n) {
				return fmt.Errorf("node %s is not Ready again yet", node)
			}
			return nil
		})
	})
	p, err := b.measurePair(ctx, b.seedAddrs(), b.Runs, manualRuns, []int{1}, []int{4})
	return p, node, err
}

func (b *Bench) seedAddrs() []string {
	seed := b.Layout.SeedNodes()
	out := make([]string, 0, len(seed))
	for _, n := range seed {
		out = append(out, n.LANIP)
	}
	return out
}

// NodeWithoutServicePods returns a seed node that runs no pod at all, so that cutting its link
// kills its address and nothing else. Only traefik's namespace was looked at before: a node that
// ran the forward-auth backend (namespace auth) passed, and with its link cut Traefik answered
// the other addresses with forwardAuth's 500 instead of the 302, failing the scenario (where the
// scheduler put the lab's pods decided whether it did).
func (b *Bench) NodeWithoutServicePods(ctx context.Context) (string, error) {
	pods, err := b.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	busy := map[string]bool{}
	for _, p := range pods.Items {
		busy[p.Spec.NodeName] = true
	}
	for _, n := range b.Layout.SeedNodes() {
		if !busy[n.NS] {
			return n.NS, nil
		}
	}
	return "", fmt.Errorf("every seed node runs a pod: no address can die alone (restart the lab: `lab down`, `lab up`)")
}

func lastLine(b []byte) string {
	s := string(b)
	for len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}

// Startup measures `version` (no cluster, no network) and a process that does nothing
// (/bin/true): the floor this machine puts under any command.
type Startup struct {
	Version    Series // seconds
	VersionRSS Series // MB
	Floor      Series // seconds
	BinaryMB   float64
}

// MeasureStartup runs `version` runs times, interleaved with /bin/true, timing each run as it
// is (no wrapper), then reads the peak memory of `version` through GNU time.
func MeasureStartup(ctx context.Context, plugin string, runs int) (Startup, error) {
	var st Startup
	env := cleanEnv()
	wall := func(argv ...string) (float64, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...) //nolint:gosec // the plugin under test and /bin/true, timed
		cmd.Env = env
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
		}
		return time.Since(start).Seconds(), nil
	}
	for i := range runs + 1 {
		v, err := wall(plugin, "version")
		if err != nil {
			return st, err
		}
		f, err := wall("/bin/true")
		if err != nil {
			return st, err
		}
		if i == 0 {
			continue // warm-up
		}
		st.Version = append(st.Version, v)
		st.Floor = append(st.Floor, f)
	}
	for range 3 {
		s, err := RunProcess(ctx, 10*time.Second, "", env, plugin, "version")
		if err != nil {
			return st, err
		}
		st.VersionRSS = append(st.VersionRSS, float64(s.MaxRSSKB)/1024)
	}
	return st, nil
}

// ScaleRow is doctor on a cluster of a given size.
type ScaleRow struct {
	Services, Pods int
	Doctor         Series // seconds
	DoctorRSS      Series // MB
	DoctorCPU      Series // seconds
	API            []APICounts
}

func ScaleRowOf(p TimedPair, services, pods int) ScaleRow {
	return ScaleRow{Services: services, Pods: pods, Doctor: p.Doctor, DoctorRSS: p.DoctorRSS, DoctorCPU: p.DoctorCPU, API: p.API}
}

// Scaled loads the cluster, measures doctor, and removes the load. loader is a client with a
// high enough QPS to create thousands of objects.
func (b *Bench) Scaled(ctx context.Context, ld Load, loader kubernetes.Interface) (ScaleRow, error) {
	mark := len(b.undo)
	defer func() { _ = b.undoSince(mark) }()
	b.Logf("load: %d Services and %d pods in %d namespaces", ld.Services, ld.Pods, ld.Namespaces)
	b.Defer("load", func(ctx context.Context) error {
		b.Logf("removing the load")
		return ld.Delete(ctx, loader)
	})
	start := time.Now()
	if err := ld.Create(ctx, loader, 16, b.Logf); err != nil {
		return ScaleRow{}, fmt.Errorf("create the load: %w", err)
	}
	b.Logf("load created in %s; waiting for the controllers to catch up", time.Since(start).Round(time.Second))
	if err := waitEndpointSlices(ctx, loader, ld.Services); err != nil {
		return ScaleRow{}, err
	}
	svcs, pods, err := Counts(ctx, loader)
	if err != nil {
		return ScaleRow{}, err
	}
	if b.Hold {
		b.Logf("holding the loaded lab (%d Services, %d pods): Ctrl-C takes it back", svcs, pods)
		<-ctx.Done()
		return ScaleRow{}, errors.New("held, not measured")
	}
	b.Logf("loaded cluster: doctor x%d", b.Runs)
	p, err := b.measurePair(ctx, b.seedAddrs(), b.Runs, 0, []int{0}, nil)
	if err == nil && len(p.DoctorFailing) > 0 {
		err = fmt.Errorf("doctor on the loaded lab: %v", p.DoctorFailing)
	}
	return ScaleRowOf(p, svcs, pods), err
}

// waitEndpointSlices waits until the EndpointSlice controller made a slice for every loaded
// Service: until then the control plane is busy and doctor's timings would measure that.
func waitEndpointSlices(ctx context.Context, c kubernetes.Interface, services int) error {
	sel := metav1.ListOptions{LabelSelector: "endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io"}
	return poll(ctx, 5*time.Minute, func() error {
		n, err := countAll(ctx, sel, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.DiscoveryV1().EndpointSlices("").List(ctx, o)
		})
		if err != nil {
			return err
		}
		if n < services {
			return fmt.Errorf("%d EndpointSlices for %d loaded Services", n, services)
		}
		return nil
	})
}
