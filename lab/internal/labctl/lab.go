// Package labctl brings the lab up and down: network, PKI, control plane, kwok nodes, the
// daemon that plays the kubelet's runtime (a process of its own: package daemon, which labctl
// only starts, finds and stops), one real kube-proxy and one real NetworkPolicy enforcer per
// node, the seed's manifests, the internet and the laptop; and reports its status. Up runs as
// named steps, and its errors name the step that failed.
package labctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/daemon"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/kubeproxy"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netpol"
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
		m[kubeproxy.ProcName(n.NS)] = kubeproxy.Match(l, n.NS)
		m[netpol.ProcName(n.NS)] = netpol.Match(n.NS)
		if HasKubeletShim(n) {
			m[ProcKubeletShim(n.NS)] = kubeletShimMatch(l, n.NS)
		}
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
	if err := workstationHealthy(l); err != nil {
		return err
	}
	return waitAPIServer(ctx, l, 3*time.Second)
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
	names := make([]string, 0, len(pidfiles))
	for _, pf := range pidfiles {
		names = append(names, strings.TrimSuffix(filepath.Base(pf), ".pid"))
	}
	errs = append(errs, parallel(names, func(name string) error { return mgr.Stop(ctx, name, l.StateDir) })...)
	if err := stopWorkstation(ctx, l); err != nil {
		errs = append(errs, err)
	}
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
	"kwok", "kube-proxy", "coredns", "traefik", "openvpn", "lab"}

func labProgram(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	argv0, _, _ := strings.Cut(string(b), "\x00")
	argv0, _, _ = strings.Cut(argv0, " ")
	base := strings.TrimSuffix(filepath.Base(argv0), ":")
	return slices.Contains(labPrograms, base)
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
