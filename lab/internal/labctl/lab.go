// Package labctl brings the lab up and down: network, PKI, control plane, kwok nodes, the
// daemon that plays kubelet runtime and kube-proxy (a process of its own: package daemon, which
// labctl only starts, finds and stops), the seed's manifests, the internet and the laptop; and
// reports its status.
package labctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/binaries"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/daemon"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/pki"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// Options of Up.
type Options struct {
	// LabDir is the repository's lab/ directory (build.sh, manifests).
	LabDir string
	// Out receives progress lines.
	Out io.Writer
	// Timeout bounds the whole bring-up (binaries already built).
	Timeout time.Duration
}

// Procs is the manager of the lab's top-level processes.
func Procs(l layout.Layout) procs.Manager {
	return procs.Manager{PidDir: l.PidDir(), LogDir: l.LogDir()}
}

// expected lists every top-level process of a running lab with the string that identifies it.
func expected(l layout.Layout, st State) map[string]string {
	m := map[string]string{
		ProcEtcd:        st.Binaries.EtcdBin(),
		ProcAPIServer:   st.Binaries.APIServerBin(),
		ProcController:  st.Binaries.ControllerBin(),
		ProcScheduler:   st.Binaries.SchedulerBin(),
		ProcInternetDNS: st.Binaries.CoreDNSBin(),
		ProcInternetWeb: "serve-http",
		daemon.ProcName: daemon.Match(l),
		ProcLaptopVPN:   "openvpn",
	}
	for _, n := range l.Nodes {
		m[ProcKwok(n.NS)] = st.Binaries.KwokBin()
	}
	return m
}

// Healthy returns nil when a lab is up and complete: state recorded as ready, every process
// alive, every namespace present, the apiserver ready.
func Healthy(ctx context.Context, l layout.Layout) error {
	st, err := LoadState(l)
	if err != nil {
		return err
	}
	if !st.Ready {
		return errors.New("the last bring-up did not finish")
	}
	mgr := Procs(l)
	for name, match := range expected(l, st) {
		if _, ok := mgr.Pid(name, match); !ok {
			return fmt.Errorf("process %s is not running (log: %s)", name, mgr.LogFile(name))
		}
	}
	for _, h := range l.Hosts() {
		ok, err := netns.Exists(ctx, h.NS)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("namespace %s is missing", h.NS)
		}
	}
	return waitAPIServer(ctx, l, 3*time.Second)
}

// Up brings the lab up, or does nothing if a healthy lab is running. A broken or partial lab
// is torn down first: rebuilding is faster and more predictable than repairing.
func Up(ctx context.Context, l layout.Layout, o Options) error {
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if err := preflight(l); err != nil {
		return err
	}
	// Progress log, best effort: a lost line must not fail the bring-up.
	say := func(format string, args ...any) { _, _ = fmt.Fprintf(o.Out, "[lab] "+format+"\n", args...) }
	bins, err := binaries.Build(ctx, o.LabDir, o.Out)
	if err != nil {
		return err
	}
	if err := Healthy(ctx, l); err == nil && kwokConfigCurrent(l, bins) {
		say("already up and healthy")
		return refresh(ctx, l, o, say)
	} else if err == nil {
		say("existing lab runs other kwok stages than this checkout: rebuilding it")
	} else if _, statErr := os.Stat(l.StateDir); statErr == nil {
		say("existing lab is not healthy (%v): rebuilding it", err)
	}
	if err := Down(ctx, l, io.Discard); err != nil {
		return fmt.Errorf("clean up before up: %w", err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	st := State{Binaries: bins, CreatedAt: start}
	if err := bringUp(ctx, l, o, st, say); err != nil {
		return fmt.Errorf("%w\n(logs in %s; `lab down` removes everything)", err, l.LogDir())
	}
	st.Ready = true
	if st.ManifestsDigest, err = dirDigest(filepath.Join(o.LabDir, "manifests", "base")); err != nil {
		return err
	}
	st.UpDuration = time.Since(start).Round(100 * time.Millisecond).String()
	if err := SaveState(l, st); err != nil {
		return err
	}
	say("up in %s", st.UpDuration)
	return nil
}

func bringUp(ctx context.Context, l layout.Layout, o Options, st State, say func(string, ...any)) error {
	step := time.Now()
	lap := func(what string) { say("%-34s %5.1fs", what, time.Since(step).Seconds()); step = time.Now() }
	for _, d := range []string{l.StateDir, l.Path("bin"), l.LogDir(), l.PidDir(), l.PodsDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := SaveState(l, st); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// The daemon and responders run from a copy: `go run` deletes its binary when it exits.
	if err := copyFile(self, l.LabBinary(), 0o755); err != nil {
		return fmt.Errorf("copy lab binary: %w", err)
	}
	var nodeIPs []pki.NodeIP
	for _, n := range l.Nodes {
		nodeIPs = append(nodeIPs, pki.NodeIP{Name: n.NS, IP: n.LANIP})
	}
	if err := pki.GenerateLab(l.Path("pki"), pki.Addresses{APIServerIP: l.ControlPlane.LANIP,
		KubernetesVIP: "10.96.0.1", Nodes: nodeIPs, AppsZone: "apps.example.com"}); err != nil {
		return err
	}
	if err := writeKubeconfigs(l); err != nil {
		return err
	}
	if err := writeAuditPolicy(l); err != nil {
		return err
	}
	lap("certificates and kubeconfigs")
	if err := BuildNetwork(ctx, l); err != nil {
		return err
	}
	lap("network namespaces")
	mgr := Procs(l)
	cp := controlPlaneSpecs(l, st.Binaries)
	for _, spec := range cp[:2] {
		if _, _, err := mgr.Start(spec); err != nil {
			return err
		}
	}
	if err := waitAPIServer(ctx, l, 60*time.Second); err != nil {
		return err
	}
	lap("etcd and kube-apiserver")
	for _, spec := range cp[2:] {
		if _, _, err := mgr.Start(spec); err != nil {
			return err
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", l.AdminKubeconfig())
	if err != nil {
		return err
	}
	// The externalIPs deprecation warning is expected (LA106 reports it): say it once.
	cfg.WarningHandler = rest.NewWarningWriter(o.Out, rest.WarningWriterOptions{Deduplicate: true})
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := createNodes(ctx, client, l); err != nil {
		return err
	}
	kwokConf, err := writeKwokConfig(l, st.Binaries)
	if err != nil {
		return err
	}
	for _, n := range l.Nodes {
		if _, _, err := mgr.Start(kwokSpec(l, st.Binaries, n, kwokConf)); err != nil {
			return err
		}
	}
	inet, err := internetSpecs(l, st.Binaries)
	if err != nil {
		return err
	}
	for _, spec := range inet {
		if _, _, err := mgr.Start(spec); err != nil {
			return err
		}
	}
	if _, _, err := mgr.Start(daemon.Spec(l)); err != nil {
		return err
	}
	if err := waitNodesReady(ctx, client, l, 60*time.Second); err != nil {
		return err
	}
	lap("controllers, kwok nodes, daemon")
	applier, err := NewApplier(cfg)
	if err != nil {
		return err
	}
	manifests := filepath.Join(o.LabDir, "manifests", "base")
	if err := applier.ApplyFile(ctx, filepath.Join(manifests, "00-namespaces.yaml")); err != nil {
		return err
	}
	if err := createSecrets(ctx, client, l); err != nil {
		return err
	}
	if err := applier.ApplyDir(ctx, manifests); err != nil {
		return err
	}
	lap("manifests applied")
	if err := waitFor(ctx, "workloads", 90*time.Second, deploymentsAvailable(client)); err != nil {
		return err
	}
	lap("deployments available")
	laptop, err := laptopSpec(l)
	if err != nil {
		return err
	}
	if _, _, err := mgr.Start(laptop); err != nil {
		return err
	}
	for _, w := range []struct {
		what  string
		check func(context.Context) error
	}{
		{"zone DNS on every node address", zoneAnswers(l)},
		{"HTTPS 302 through the proxy", proxyRedirects(l)},
		{"VPN tunnel from the laptop", tunnelUp(l)},
	} {
		if err := waitFor(ctx, w.what, 60*time.Second, w.check); err != nil {
			return err
		}
	}
	lap("DNS, HTTPS and VPN answer")
	return nil
}

// preflight checks what the lab cannot work without.
func preflight(l layout.Layout) error {
	if os.Geteuid() != 0 {
		return errors.New("the lab needs root (network namespaces, iptables): run it with sudo or as root")
	}
	var missing []string
	for _, tool := range []string{"ip", "ss", "iptables", "iptables-restore", "conntrack", "sysctl", "nginx", "openvpn", "ping", "curl", "dig"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing tools: %s (run lab/install-deps.sh)", strings.Join(missing, ", "))
	}
	if err := internetRangeIsFree(l); err != nil {
		return err
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("/dev/net/tun is missing: OpenVPN cannot create its tunnel: %w", err)
	}
	return nil
}

// Down removes everything the lab made: processes (daemon first, so it restarts nothing),
// namespaces, bridge, resolver files, the state directory. It works after a crash: names come
// from the layout, processes from pidfiles, namespaces and a sweep of /proc for anything still
// running from the state directory.
func Down(ctx context.Context, l layout.Layout, out io.Writer) error {
	var errs []error
	mgr := Procs(l)
	// The daemon first, so that it restarts nothing; then everything else at once (the
	// apiserver alone takes seconds to shut down gracefully).
	if err := mgr.Stop(ctx, daemon.ProcName, l.StateDir); err != nil {
		errs = append(errs, err)
	}
	pidfiles, _ := filepath.Glob(filepath.Join(l.PidDir(), "*.pid"))
	var names []string
	for _, pf := range pidfiles {
		names = append(names, strings.TrimSuffix(filepath.Base(pf), ".pid"))
	}
	errs = append(errs, parallel(names, func(name string) error { return mgr.Stop(ctx, name, l.StateDir) })...)
	if err := sweepStateDirProcesses(ctx, l); err != nil {
		errs = append(errs, err)
	}
	if err := TeardownNetwork(ctx, l); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(l.StateDir); err != nil {
		errs = append(errs, err)
	}

	if len(errs) == 0 {
		_, _ = fmt.Fprintln(out, "[lab] down: no lab namespace, process or file left") // progress log, best effort
	}
	return errors.Join(errs...)
}

// sweepStateDirProcesses ends processes whose command line names the state directory (every
// lab process does, through its config or binary path) but whose pidfile is gone.
func sweepStateDirProcesses(ctx context.Context, l layout.Layout) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	self := os.Getpid()
	var errs []error
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if procs.CmdlineContains(pid, l.StateDir+"/") && labProgram(pid) {
			if err := procs.Terminate(ctx, pid); err != nil {
				errs = append(errs, fmt.Errorf("process %d: %w", pid, err))
			}
		}
	}
	return errors.Join(errs...)
}

// labPrograms are the programs the lab starts; the sweep never touches anything else (a
// `tail -f` of a lab log also names the state directory).
var labPrograms = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
	"kwok", "coredns", "nginx", "openvpn", "lab"}

func labProgram(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	argv0, _, _ := strings.Cut(string(b), "\x00")
	argv0, _, _ = strings.Cut(argv0, " ")
	base := strings.TrimSuffix(filepath.Base(argv0), ":")
	for _, p := range labPrograms {
		if base == p {
			return true
		}
	}
	return false
}

// parallel runs fn for every item concurrently and returns the errors.
func parallel[T any](items []T, fn func(T) error) []error {
	errc := make(chan error, len(items))
	for _, it := range items {
		go func(it T) { errc <- fn(it) }(it)
	}
	var errs []error
	for range items {
		if err := <-errc; err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
