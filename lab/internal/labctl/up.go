package labctl

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/binaries"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/daemon"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/pki"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// Up brings the lab up, or does nothing if a healthy lab is running. A broken or partial lab
// is torn down first: rebuilding is faster and more predictable than repairing. Its errors
// say "lab up: step '<step>': ...".
func Up(ctx context.Context, l layout.Layout, o Options) error {
	if err := up(ctx, l, o); err != nil {
		return fmt.Errorf("lab up: %w", err)
	}
	return nil
}

func up(ctx context.Context, l layout.Layout, o Options) error {
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if err := inStep("check this machine", preflight(l)); err != nil {
		return err
	}
	// Progress log, best effort: a lost line must not fail the bring-up.
	say := func(format string, args ...any) { _, _ = fmt.Fprintf(o.Out, "[lab] "+format+"\n", args...) }
	bins, err := binaries.Build(ctx, o.LabDir, o.Out)
	if err := inStep("build the lab's binaries", err); err != nil {
		return err
	}
	if err := Healthy(ctx, l); err == nil && kwokConfigCurrent(l, bins) {
		say("already up and healthy")
		return inStep("refresh the running lab", refresh(ctx, l, o, say))
	} else if err == nil {
		say("existing lab runs other kwok stages than this checkout: rebuilding it")
	} else if _, statErr := os.Stat(l.StateDir); statErr == nil {
		say("existing lab is not healthy (%v): rebuilding it", err)
	}
	if err := inStep("clean up before up", Down(ctx, l, io.Discard)); err != nil {
		return err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	b := &bringUp{l: l, o: o, st: State{Binaries: bins, CreatedAt: start}, mgr: Procs(l)}
	if err := runSteps(ctx, b.steps(), say); err != nil {
		return fmt.Errorf("%w\n(logs in %s; `lab down` removes everything)", err, l.LogDir())
	}
	b.st.Ready = true
	b.st.UpDuration = time.Since(start).Round(100 * time.Millisecond).String()
	if err := inStep("record the lab as ready", b.recordReady()); err != nil {
		return err
	}
	say("up in %s", b.st.UpDuration)
	return nil
}

// bringUp is what the steps of one bring-up share: each step uses what earlier ones made.
type bringUp struct {
	l   layout.Layout
	o   Options
	st  State
	mgr procs.Manager
	// Made by the steps.
	cfg      *rest.Config
	client   kubernetes.Interface
	applier  *Applier
	kwokConf string
}

// steps lists the bring-up in order; the laps group them into the phases whose durations
// `lab up` prints.
func (b *bringUp) steps() []step {
	l := b.l
	cp := controlPlaneSpecs(l, b.st.Binaries)
	manifests := filepath.Join(b.o.LabDir, "manifests", "base")
	steps := []step{
		{name: "create the state directories", run: b.makeDirs},
		{name: "record the state", run: func(context.Context) error { return SaveState(l, b.st) }},
		{name: "copy the lab binary", run: b.copySelf},
		{name: "generate the certificates", run: b.generatePKI},
		{name: "write the kubeconfigs", run: func(context.Context) error { return writeKubeconfigs(l) }},
		{name: "write the audit policy", run: func(context.Context) error { return writeAuditPolicy(l) }, lap: "certificates and kubeconfigs"},
		{name: "build the network", run: func(ctx context.Context) error { return BuildNetwork(ctx, l) }},
		{name: "write the nodes' CNI configuration", run: func(context.Context) error { return WriteNodeCNIConfigs(l, b.o.LabDir) },
			lap: "network namespaces"},
		{name: "start the laptop's workstation (DHCP, NetworkManager, systemd-resolved)", run: b.startWorkstation, lap: "workstation"},
		b.start(cp[0]), b.start(cp[1]),
		{name: "wait for kube-apiserver", run: func(ctx context.Context) error { return waitAPIServer(ctx, l, 60*time.Second) }, lap: "etcd and kube-apiserver"},
		b.start(cp[2]), b.start(cp[3]),
		{name: "connect to kube-apiserver", run: b.connect},
		{name: "create the nodes", run: func(ctx context.Context) error { return createNodes(ctx, b.client, l) }},
		{name: "write the kwok configuration", run: b.writeKwokConfig},
	}
	for _, n := range l.Nodes {
		steps = append(steps, b.startLater(ProcKwok(n.NS), func() (procs.Spec, error) { return kwokSpec(l, b.st.Binaries, n, b.kwokConf), nil }))
		if HasKubeletShim(n) {
			steps = append(steps, b.start(kubeletShimSpec(l, n)))
		}
	}
	steps = append(steps, b.kubeProxySteps()...)
	steps = append(steps,
		step{name: "start the internet's servers", run: b.startInternet},
		b.start(daemon.Spec(l)),
		step{name: "wait for the nodes to be Ready", run: func(ctx context.Context) error { return waitNodesReady(ctx, b.client, l, 60*time.Second) },
			lap: "controllers, kwok nodes, daemon"},
		step{name: "connect the manifest applier", run: b.connectApplier},
		step{name: "apply the namespaces", run: func(ctx context.Context) error {
			return b.applier.ApplyFile(ctx, filepath.Join(manifests, "00-namespaces.yaml"))
		}},
		step{name: "apply Traefik's and the Gateway API's CRDs", run: func(ctx context.Context) error { return applyTraefikCRDs(ctx, b.applier, b.st.Binaries) }},
	)
	steps = append(steps, b.netpolSteps()...)
	steps = append(steps,
		step{name: "create the secrets", run: func(ctx context.Context) error { return createSecrets(ctx, b.client, l) }},
		step{name: "apply the base manifests", run: func(ctx context.Context) error { return b.applier.ApplyDir(ctx, manifests) }, lap: "manifests applied"},
		step{name: "wait for the deployments", run: func(ctx context.Context) error {
			return waitFor(ctx, "workloads", 90*time.Second, deploymentsAvailable(b.client))
		}, lap: "deployments available"},
		b.startLater(ProcLaptopVPN, func() (procs.Spec, error) { return laptopSpec(l) }),
		b.waitStep("zone DNS on every node address", zoneAnswers(l), ""),
		b.waitStep("HTTPS 302 through the proxy", proxyRedirects(l), ""),
		b.waitStep("VPN tunnel from the laptop", tunnelUp(l), "DNS, HTTPS and VPN answer"),
		b.waitStep("the NetworkPolicy enforcers", netpolReady(l), "NetworkPolicy enforcers ready"),
	)
	return steps
}

func (b *bringUp) makeDirs(context.Context) error {
	for _, d := range []string{b.l.StateDir, b.l.Path("bin"), b.l.LogDir(), b.l.PidDir(), b.l.PodsDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// copySelf copies this binary into the state directory: the daemon and the responders run
// from the copy, since `go run` deletes its binary when it exits.
func (b *bringUp) copySelf(context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return copyFile(self, b.l.LabBinary(), 0o755)
}

func (b *bringUp) generatePKI(context.Context) error {
	nodeIPs := make([]pki.NodeIP, 0, len(b.l.Nodes))
	for _, n := range b.l.Nodes {
		nodeIPs = append(nodeIPs, pki.NodeIP{Name: n.NS, IP: n.LANIP})
	}
	return pki.GenerateLab(b.l.Path("pki"), pki.Addresses{APIServerIP: b.l.ControlPlane.LANIP,
		KubernetesVIP: "10.96.0.1", Nodes: nodeIPs, AppsZone: "apps.example.com"})
}

// connect makes the admin client the later steps use.
func (b *bringUp) connect(context.Context) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", b.l.AdminKubeconfig())
	if err != nil {
		return err
	}
	// The externalIPs deprecation warning is expected (LA106 reports it): say it once.
	cfg.WarningHandler = rest.NewWarningWriter(b.o.Out, rest.WarningWriterOptions{Deduplicate: true})
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	b.cfg, b.client = cfg, client
	return nil
}

func (b *bringUp) connectApplier(context.Context) error {
	a, err := NewApplier(b.cfg)
	b.applier = a
	return err
}

func (b *bringUp) writeKwokConfig(context.Context) error {
	conf, err := writeKwokConfig(b.l, b.st.Binaries)
	b.kwokConf = conf
	return err
}

func (b *bringUp) startInternet(context.Context) error {
	specs, err := internetSpecs(b.l, b.st.Binaries)
	if err != nil {
		return err
	}
	for _, spec := range specs {
		if _, _, err := b.mgr.Start(spec); err != nil {
			return err
		}
	}
	return nil
}

// start is the step that starts a process whose spec is known before the bring-up begins.
func (b *bringUp) start(spec procs.Spec) step {
	return b.startLater(spec.Name, func() (procs.Spec, error) { return spec, nil })
}

// startLater is the step that starts a process whose spec depends on earlier steps.
func (b *bringUp) startLater(name string, spec func() (procs.Spec, error)) step {
	return step{name: "start " + name, run: func(context.Context) error {
		s, err := spec()
		if err != nil {
			return err
		}
		_, _, err = b.mgr.Start(s)
		return err
	}}
}

// waitStep waits up to a minute for check to pass.
func (b *bringUp) waitStep(what string, check func(context.Context) error, lap string) step {
	return step{name: "wait for " + what, lap: lap, run: func(ctx context.Context) error {
		return waitFor(ctx, what, 60*time.Second, check)
	}}
}

// recordReady saves the state of a finished bring-up, with the digest of the manifests it
// applied (refresh applies them again when they change).
func (b *bringUp) recordReady() error {
	digest, err := dirDigest(filepath.Join(b.o.LabDir, "manifests", "base"))
	if err != nil {
		return err
	}
	b.st.ManifestsDigest = digest
	return SaveState(b.l, b.st)
}
