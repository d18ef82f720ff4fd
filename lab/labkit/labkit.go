// Package labkit gives tests a running lab: Main brings it up once per test binary (reusing
// a healthy lab, so a second `go test` starts in seconds), and the Lab handle carries the
// kubeconfig, a clientset, the CA file and the topology, plus fault injectors that are real
// (kernel state, processes, API objects) and undo themselves through t.Cleanup.
//
// Tests that use it carry the build tag `lab` and need root:
//
//	var lab *labkit.Lab
//	func TestMain(m *testing.M) { os.Exit(labkit.Main(m, &lab)) }
package labkit

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/binaries"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/faults"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/labctl"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

// Node is a lab node: a network namespace running a kwok kubelet.
type Node struct {
	Name    string
	IP      string
	PodCIDR string
	// Dedicated is true for node-vpn, whose pod (the VPN pod) has a network namespace of its
	// own.
	Dedicated bool
}

// Lab is a handle on the running lab.
type Lab struct {
	Kubeconfig string
	CAFile     string
	// Kubectl is the cached kubectl binary built from the same Kubernetes version.
	KubectlBin string
	Config     *rest.Config
	Client     kubernetes.Interface
	// Nodes are node-1..3 (the seed's addresses) and node-vpn.
	Nodes []Node
	// Workstation is the root namespace's LAN address, where tests run.
	Workstation string
	// LabDir is the repository's lab/ directory (manifests).
	LabDir string

	layout layout.Layout
	faults faults.Lab
}

// OpTimeout bounds each fault operation.
const OpTimeout = 2 * time.Minute

// Main brings the lab up (or reuses a healthy one), stores the handle in *lab, and runs the
// tests. The lab stays up afterwards for the next run; `make lab-down` removes it.
//
// Test binaries that share the lab run one at a time: faults change the one lab they all
// see, so Main holds an exclusive lock (layout.TestLock) from before Up to the end.
func Main(m *testing.M, lab **Lab) int {
	// `go test -list` only names the tests: it needs no lab (and must not start one).
	flag.Parse()
	if f := flag.Lookup("test.list"); f != nil && f.Value.String() != "" {
		return m.Run()
	}
	unlock, err := labctl.LockLab(layout.Default(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "labkit:", err)
		return 1
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	l, err := up(ctx, true)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "labkit:", err)
		return 1
	}
	*lab = l
	return m.Run()
}

// Up returns a handle on a healthy lab, running `lab up` from this checkout: it brings the
// lab up when needed, or refreshes a running one (daemon binary, base manifests) in about a
// second. The CLI, not this process, must do it: it copies itself into the state directory
// to run the daemon.
func Up(ctx context.Context) (*Lab, error) { return up(ctx, false) }

// up runs `lab up`; lockHeld tells the CLI that this process already holds the lab lock (the
// CLI takes it otherwise, and would wait for us forever).
func up(ctx context.Context, lockHeld bool) (*Lab, error) {
	labDir, err := binaries.LabDir()
	if err != nil {
		return nil, err
	}
	{
		bin := filepath.Join(os.TempDir(), fmt.Sprintf("lanaccess-lab-%d", os.Getpid()))
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./lab/cmd/lab")
		build.Dir = filepath.Dir(labDir)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("build the lab CLI: %w", err)
		}
		defer func() { _ = os.Remove(bin) }()
		cmd := exec.CommandContext(ctx, bin, "up")
		cmd.Dir = filepath.Dir(labDir)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if lockHeld {
			cmd.Env = append(os.Environ(), labctl.LockHeldEnv+"=1")
		}
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("lab up: %w", err)
		}
	}
	return Attach(ctx)
}

// Attach returns a handle on the running lab, or an error if it is not healthy.
func Attach(ctx context.Context) (*Lab, error) {
	l := layout.Default()
	if err := labctl.Healthy(ctx, l); err != nil {
		return nil, fmt.Errorf("lab is not up: %w", err)
	}
	st, err := labctl.LoadState(l)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", l.AdminKubeconfig())
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	labDir, err := binaries.LabDir()
	if err != nil {
		return nil, err
	}
	lab := &Lab{
		Kubeconfig: l.AdminKubeconfig(), CAFile: l.CAFile(), KubectlBin: st.Binaries.KubectlBin(),
		Config: cfg, Client: client, Workstation: l.Workstation, LabDir: labDir,
		layout: l, faults: faults.Lab{Layout: l, Client: client},
	}
	for _, n := range l.Nodes {
		lab.Nodes = append(lab.Nodes, Node{Name: n.NS, IP: n.LANIP, PodCIDR: n.PodCIDR, Dedicated: n.Dedicated})
	}
	return lab, nil
}

// NodeIPs are the three addresses of the seed (node-1..3).
func (l *Lab) NodeIPs() []string {
	var ips []string
	for _, n := range l.Nodes {
		if !n.Dedicated {
			ips = append(ips, n.IP)
		}
	}
	return ips
}

// Node returns a node by name.
func (l *Lab) Node(name string) (Node, error) {
	for _, n := range l.Nodes {
		if n.Name == name {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("no lab node named %q", name)
}

// VPNNode is the node the VPN pod runs on.
func (l *Lab) VPNNode() Node {
	for _, n := range l.Nodes {
		if n.Dedicated {
			return n
		}
	}
	return Node{}
}

// Laptop, Internet and ControlPlane name the other namespaces.
func (l *Lab) Laptop() string       { return l.layout.Laptop.NS }
func (l *Lab) Internet() string     { return l.layout.Internet.NS }
func (l *Lab) ControlPlane() string { return l.layout.ControlPlane.NS }

// VPNServerTunnelIP and the functions below are addresses that tests aim at.
func (l *Lab) VPNServerTunnelIP() string { return l.layout.VPNServerTun }
func (l *Lab) VPNPool() string           { return l.layout.VPNPool }
func (l *Lab) ClusterDNSIP() string      { return l.layout.ClusterDNSIP }
func (l *Lab) InternetDNS() string       { return l.layout.InternetDNS }
func (l *Lab) InternetWeb() string       { return l.layout.InternetWeb }
func (l *Lab) APIServerURL() string      { return l.layout.APIServerURL() }

// PodLogsFile is the file the lab's kwoks serve as the log of a pod of labctl.LoggedPods (`kubectl
// logs`, Helm's --logs), in the CRI log format; a test that plays the kubelet for that pod
// writes it.
func (l *Lab) PodLogsFile(namespace, name string) string {
	return labctl.PodLogsFile(l.layout, namespace, name)
}
