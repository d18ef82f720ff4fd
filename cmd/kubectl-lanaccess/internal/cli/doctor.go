package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/checks"
	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/checks/config"
	"github.com/lanaccess/kubectl-lanaccess/checks/netpath"
	"github.com/lanaccess/kubectl-lanaccess/checks/nodes"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/noderead"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
	"github.com/lanaccess/kubectl-lanaccess/pkg/valid"
)

// DoctorFlags is the raw input of `doctor`.
type DoctorFlags struct {
	Checks         *CheckFlags
	AllNamespaces  bool
	ProxyService   string
	DNSService     string
	ConfigMap      string
	Zone           string
	Host           string
	OutsideName    string
	ExpectStatus   int
	ExpectLocation string
	Insecure       bool
	CAFile         string
	NoHelpers      bool
	NameOwners     bool
	Image          string
	HelperNS       string
	// Addresses describe the setup without the cluster (doctor_offline.go).
	Addresses []string
}

// NewDoctorFlags returns the defaults.
func NewDoctorFlags() *DoctorFlags {
	return &DoctorFlags{Checks: NewCheckFlags(), ExpectStatus: netpath.DefaultExpectStatus, OutsideName: netpath.DefaultOutsideName, HelperNS: podexec.DefaultHelperNamespace}
}

// AddFlags registers doctor's flags.
func (f *DoctorFlags) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	f.Checks.AddFlags(fs, catalogue.Doctor)
	fs.BoolVarP(&f.AllNamespaces, "all-namespaces", "A", false, "discover across all namespaces (the default unless -n is given)")
	fs.StringVar(&f.ProxyService, "proxy-service", "", "the reverse proxy Service, [namespace/]name (default: the Service with externalIPs exposing 443)")
	fs.StringVar(&f.DNSService, "dns-service", "", "the zone DNS Service, [namespace/]name (default: the Service with externalIPs exposing 53)")
	fs.StringVar(&f.ConfigMap, "configmap", "", "the ConfigMap holding the Corefile, [namespace/]name (default: the one the DNS pods mount)")
	fs.StringVar(&f.Zone, "zone", "", "the zone served to workstations, e.g. apps.example.com (default: the block with template IN A)")
	fs.StringVar(&f.Host, "host", "", "name used by the DNS and HTTPS probes (default: a route of the proxy in the zone)")
	fs.StringVar(&f.OutsideName, "outside-name", f.OutsideName, "a name outside the zone that must resolve through the '.' block")
	fs.IntVar(&f.ExpectStatus, "expect-status", f.ExpectStatus, "HTTP status expected from the proxy for the probe host")
	fs.StringVar(&f.ExpectLocation, "expect-location", "", "host or regular expression the Location header must match (the identity provider)")
	fs.BoolVar(&f.Insecure, "insecure", false, "do not fail on an untrusted certificate (validity is still reported)")
	fs.StringVar(&f.CAFile, "ca-file", "", "PEM bundle of the private CA that signs the proxy's certificate")
	fs.BoolVar(&f.NoHelpers, "no-helpers", false, "read-only: never create helper pods (LA201 then skips)")
	fs.BoolVar(&f.NameOwners, "name-owners", false, "LA201 names the process holding a port: the helper then runs as root with hostPID, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH (node root), which the helper namespace must allow")
	fs.StringVar(&f.Image, "image", "", "image of the helper pods (default busybox pinned by digest; for air-gapped clusters, a mirror that keeps the digest)")
	fs.StringVar(&f.HelperNS, "helper-namespace", f.HelperNS, "namespace for helper pods (the rbac-helpers manifest creates the default one)")
	fs.StringSliceVar(&f.Addresses, "addresses", nil, "without cluster access: the node addresses (the Services' externalIPs) to check the DNS and HTTPS paths on; needs --zone, the cluster is not read")
}

// DoctorOptions is doctor's validated input: every flag value parsed, nothing left to fail
// once the checks run.
type DoctorOptions struct {
	Checks    *CheckFlags
	Selection kube.Selection
	Path      netpath.Options
	// Probes configures the network probes (timeout, CA bundle).
	Probes    probe.Config
	NoHelpers bool
	Helpers   podexec.HelperConfig
	// Offline is the path given by --addresses (nil: discovered from the cluster).
	Offline *netpath.Path
	// warnings receives what the run could not undo (a helper pod left): stderr.
	warnings io.Writer

	kubeFlags *kubeFlags
	connect   clientFactory
}

// ToOptions completes the flags (--config) and validates every value (exit 2 naming the flag).
func (f *DoctorFlags) ToOptions(cmd *cobra.Command, kubeFlags *kubeFlags, connect clientFactory) (*DoctorOptions, error) {
	if err := f.Checks.Complete(cmd, catalogue.Doctor); err != nil {
		return nil, err
	}
	rule, err := netpath.ParseLocationRule(f.ExpectLocation)
	if err != nil {
		return nil, usageErr("invalid --expect-location: %v", err)
	}
	if f.ExpectStatus < 100 || f.ExpectStatus > 599 {
		return nil, usageErr("invalid --expect-status %d: an HTTP status such as 302", f.ExpectStatus)
	}
	z, err := parseZoneFlag(f.Zone)
	if err != nil {
		return nil, err
	}
	for flag, name := range map[string]string{"--host": f.Host, "--outside-name": f.OutsideName} {
		if name == "" {
			continue
		}
		if err := valid.Hostname(name); err != nil {
			return nil, usageErr("invalid %s: %v (a DNS name such as grafana.apps.example.com)", flag, err)
		}
	}
	for flag, ref := range map[string]string{"--proxy-service": f.ProxyService, "--dns-service": f.DNSService, "--configmap": f.ConfigMap} {
		if err := kube.ValidateObjectRef(ref); err != nil {
			return nil, usageErr("invalid %s %q: %v", flag, ref, err)
		}
	}
	if f.NoHelpers && f.NameOwners {
		return nil, usageErr("--name-owners reads through a helper pod, which --no-helpers forbids: give one or the other")
	}
	if err := kube.ValidateNamespace(f.HelperNS); err != nil {
		return nil, usageErr("invalid --helper-namespace %q: %v", f.HelperNS, err)
	}
	pcfg := probe.Config{Timeout: f.Checks.Timeout, CAFile: f.CAFile}
	if err := pcfg.Validate(); err != nil {
		return nil, usageErr("--ca-file %s: %v (give a PEM file of CA certificates)", f.CAFile, err)
	}
	offline, err := f.offlinePath()
	if err != nil {
		return nil, err
	}
	// -n (or both Services named NAMESPACE/NAME) keeps discovery in those namespaces
	// (Selection.Scope); -A, or neither, reads the whole cluster.
	sel := kube.Selection{ProxyService: f.ProxyService, DNSService: f.DNSService, ConfigMap: f.ConfigMap, Zone: z, Host: f.Host, AllNamespaces: f.AllNamespaces}
	if !f.AllNamespaces {
		sel.Namespace = namespaceGiven(cmd)
	}
	return &DoctorOptions{
		Checks: f.Checks, Selection: sel,
		Path:   netpath.Options{OutsideName: strings.TrimSuffix(f.OutsideName, "."), ExpectStatus: f.ExpectStatus, ExpectLocation: rule, Insecure: f.Insecure},
		Probes: pcfg, NoHelpers: f.NoHelpers, Helpers: podexec.HelperConfig{Namespace: f.HelperNS, Image: f.Image, NameOwners: f.NameOwners, RunID: f.Checks.tape.RunID()}, Offline: offline,
		kubeFlags: kubeFlags, connect: f.Checks.tape.connect(connect),
	}, nil
}

// Run runs doctor (with --wait, again until it passes).
func (o *DoctorOptions) Run(ctx context.Context, streams genericiooptions.IOStreams) error {
	o.warnings = streams.ErrOut
	return runChecks(ctx, streams, o.Checks, catalogue.Doctor, o)
}

// Prepare discovers the setup and wires the families' environments for one attempt.
func (o *DoctorOptions) Prepare(ctx context.Context, progress *report.Progress) (attempt, error) {
	if o.Offline != nil {
		return o.prepareOffline()
	}
	c, err := o.connect(o.kubeFlags, 10*time.Second)
	if err != nil {
		return attempt{}, err
	}
	a := attempt{Header: report.Report{Cluster: c.cluster}}
	progress.Message("discovering the setup…")
	setup, err := discover(ctx, c, o.Selection)
	if err != nil {
		if kube.IsUsage(err) {
			return a, err
		}
		return a, fmt.Errorf("could not read the cluster at %s (context %s): %w", c.cluster.Server, c.cluster.Context, err)
	}
	setup.APIWarnings = append(setup.APIWarnings, c.warnings.Warnings()...)
	rt, err := newRuntime(c, o.Probes, o.Helpers, progress, o.warnings)
	if err != nil {
		return a, err
	}
	a.Cleanup = rt.Close
	// One reader per attempt: each node's addresses and links are read once, whichever check asks.
	nodeReader := &noderead.NodeNetReader{Shells: rt.shells, Limit: o.Checks.ExecTimeout}
	if o.NoHelpers {
		nodeReader.Unavailable = "--no-helpers: doctor stays read-only"
	}
	env := checks.DoctorEnv{
		Config: &config.Env{Setup: setup, Access: kube.NewAccessReviewer(c.typed).Knowing(c.reads.Listed), HelperNamespace: o.Helpers.Namespace, NoHelpers: o.NoHelpers, Reader: nodeReader},
		Nodes:  &nodes.Env{Setup: setup, Pods: nodes.ClientPods{Client: c.typed}, Shells: rt.shells, NoHelpers: o.NoHelpers, ExecTimeout: o.Checks.ExecTimeout, Reader: nodeReader},
		Path:   &netpath.Env{Path: netpath.PathFromSetup(setup), Probes: rt.probes, Options: o.Path},
	}
	a.Header.Subject = describeSetup(setup)
	a.Checks = checks.Doctor(env)
	return a, nil
}

func newDoctorCommand(kubeFlags *kubeFlags, streams genericiooptions.IOStreams, connect clientFactory) *cobra.Command {
	return newRunCommand(runCommand{
		Use:   "doctor",
		Short: "Diagnose LAN access: externalIPs, zone DNS, listeners, paths",
		Example: `  # everything: discover the proxy, the DNS Service, the ConfigMap and the zone
  kubectl lanaccess doctor

  # read-only, warnings fail the run (CI after a deploy, retrying for 3 minutes)
  kubectl lanaccess doctor --no-helpers --fail-on=warn --wait 3m \
    --junit-file report.xml

  # name the objects and the probe host explicitly
  kubectl lanaccess doctor --proxy-service traefik/traefik \
    --dns-service lan-dns/lan-dns --host grafana.apps.example.com

  # accept one known warning, and only that one
  kubectl lanaccess doctor --skip LA106-ADMISSION

  # without cluster access: the DNS and HTTPS paths on the given node addresses
  kubectl lanaccess doctor --addresses 10.0.10.11,10.0.10.12,10.0.10.13 \
    --zone apps.example.com --host grafana.apps.example.com`,
		Catalogue: catalogue.Doctor,
	}, NewDoctorFlags(), kubeFlags, streams, connect)
}

func describeSetup(s *kube.Setup) []report.KV {
	var kv []report.KV
	if s.ProxyService != nil {
		kv = append(kv, report.KV{Key: "proxy", Value: fmt.Sprintf("%s %s", kubeobj.ServiceRef(s.ProxyService), s.ProxyReachable().Describe())})
	}
	if s.DNSService != nil {
		kv = append(kv, report.KV{Key: "dns", Value: fmt.Sprintf("%s %s", kubeobj.ServiceRef(s.DNSService), s.DNSReachable().Describe())})
	}
	if s.ConfigMap != nil {
		kv = append(kv, report.KV{Key: "corefile", Value: fmt.Sprintf("%s key %s", kubeobj.ConfigMapRef(s.ConfigMap), s.CorefileKey)})
	}
	if !s.Zone.IsZero() {
		kv = append(kv, report.KV{Key: "zone", Value: s.Zone.FQDN()})
	}
	return kv
}

// discoveryTimeout bounds the whole read of the cluster: a hung aggregated API or a CRD whose
// conversion webhook never answers must not hold the run forever.
const discoveryTimeout = time.Minute

// discover reads the setup within discoveryTimeout.
func discover(ctx context.Context, c *clients, sel kube.Selection) (*kube.Setup, error) {
	ctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	sel.KubeconfigNamespace = c.namespace
	return kube.Discover(ctx, c.typed, c.dynamic, sel)
}
