package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
	"github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// workstationTarget is what client-config and client-check work from, and where it came from.
type workstationTarget struct {
	workstation.Target
	Cluster report.Cluster
	// Source says where the values came from, for the report header.
	Source string
}

// targetFunc reads the zone and the addresses; tests inject one that needs no cluster. A
// *kube.UsageError means bad usage or configuration (exit 2), any other error that the cluster
// could not be read (exit 3), as runChecks expects of a prepare function.
type targetFunc func(ctx context.Context) (workstationTarget, error)

// targetFlags name the zone and its addresses directly (a workstation usually has no access to
// the cluster), or the objects to read them from.
type targetFlags struct {
	Zone         string
	DNSServers   []string
	Answers      []string
	ProxyService string
	DNSService   string
	ConfigMap    string
	// AllNamespaces searches every namespace, whatever -n says.
	AllNamespaces bool
}

func (f *targetFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Zone, "zone", "", "the zone sent to the LAN DNS (e.g. apps.example.com); with --dns-server, the cluster is not read")
	fs.StringSliceVar(&f.DNSServers, "dns-server", nil, "the zone's DNS server addresses (the DNS Service's externalIPs); needs --zone")
	fs.StringSliceVar(&f.Answers, "answer", nil, "the addresses a name in the zone must resolve to (default: the --dns-server addresses)")
	fs.StringVar(&f.ProxyService, "proxy-service", "", "the proxy Service ([namespace/]name); discovered when empty")
	fs.StringVar(&f.DNSService, "dns-service", "", "the zone's DNS Service ([namespace/]name); discovered when empty")
	fs.StringVar(&f.ConfigMap, "configmap", "", "the ConfigMap holding the zone's Corefile ([namespace/]name); discovered when empty")
	fs.BoolVarP(&f.AllNamespaces, "all-namespaces", "A", false, "discover across all namespaces (the default unless -n is given)")
}

// source validates the flags and returns how to get the target: from the flags alone when the
// zone and the servers are given, else from the cluster.
func (f *targetFlags) source(kubeFlags *kubeFlags, connect clientFactory) (targetFunc, error) {
	if len(f.Answers) > 0 && len(f.DNSServers) == 0 {
		return nil, usageErr("--answer needs --dns-server (and --zone): they describe the setup without reading the cluster")
	}
	if len(f.DNSServers) > 0 {
		if f.Zone == "" {
			return nil, usageErr("--dns-server needs --zone")
		}
		t, err := workstation.NewTarget(f.Zone, f.DNSServers, f.Answers)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		return func(context.Context) (workstationTarget, error) {
			return workstationTarget{Target: t, Source: "flags (--zone, --dns-server)"}, nil
		}, nil
	}
	z, err := parseZoneFlag(f.Zone)
	if err != nil {
		return nil, err
	}
	sel := kube.Selection{ProxyService: f.ProxyService, DNSService: f.DNSService, ConfigMap: f.ConfigMap, Zone: z}
	if !f.AllNamespaces {
		sel.Namespace = kubeFlags.Namespace()
	}
	sel.AllNamespaces = f.AllNamespaces
	return clusterTarget(kubeFlags, sel, connect), nil
}

// clusterTarget discovers the setup with the clients connect builds and reads the target off it.
func clusterTarget(kubeFlags *kubeFlags, sel kube.Selection, connect clientFactory) targetFunc {
	return func(ctx context.Context) (workstationTarget, error) {
		c, err := connect(kubeFlags, 30*time.Second)
		if err != nil {
			return workstationTarget{}, &ExitError{Code: exitCodeOfError(err), Err: fmt.Errorf("%w; without cluster access, describe the setup with --zone and --dns-server", err)}
		}
		sel.KubeconfigNamespace = c.namespace
		t, err := discoverTarget(ctx, c.typed, c.dynamic, sel)
		t.Cluster = c.cluster
		if err != nil && !kube.IsUsage(err) {
			err = fmt.Errorf("%w; without cluster access, describe the setup with --zone and --dns-server", err)
		}
		return t, err
	}
}

// discoverTarget finds the setup with the API clients given and reads the target off it.
func discoverTarget(ctx context.Context, typed client.Interface, dyn dynamic.Interface, sel kube.Selection) (workstationTarget, error) {
	dctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	setup, err := kube.Discover(dctx, typed, dyn, sel)
	if err != nil {
		if kube.IsUsage(err) {
			return workstationTarget{}, err
		}
		return workstationTarget{}, fmt.Errorf("reading the cluster: %w", err)
	}
	t, err := targetFromSetup(setup)
	if err != nil {
		return workstationTarget{}, &kube.UsageError{Message: err.Error()}
	}
	return t, nil
}

// targetFromSetup: the servers are where the DNS is reachable, the answers where the proxy
// is (where the traffic must go; LA101 checks that the zone answers the same set), each read
// from the form in use (issue 26: externalIPs, the nodes of hostPort pods, a load balancer's
// addresses), so the workstation commands keep working across the migration.
func targetFromSetup(s *kube.Setup) (workstationTarget, error) {
	if s.DNSService == nil || s.Zone.IsZero() {
		return workstationTarget{}, fmt.Errorf("the cluster has no DNS Service with a zone: name them with --dns-service and --zone")
	}
	dns := s.DNSReachable()
	servers := dns.Raw()
	if len(servers) == 0 {
		return workstationTarget{}, fmt.Errorf("%s has no LAN address (%s): workstations have no address to send %s to", serviceName(s.DNSService), dns.Form, s.Zone.FQDN())
	}
	var answers []string
	if s.ProxyService != nil {
		answers = s.ProxyReachable().Raw()
	}
	t, err := workstation.NewTarget(s.Zone.FQDN(), servers, answers)
	if err != nil {
		return workstationTarget{}, fmt.Errorf("%s: %w", serviceName(s.DNSService), err)
	}
	source := "cluster: " + serviceName(s.DNSService)
	if s.ProxyService != nil {
		source += ", " + serviceName(s.ProxyService)
	}
	return workstationTarget{Target: t, Source: source}, nil
}

// exitFor gives a targetFunc's error its exit code, for commands that do not go through runChecks.
func exitFor(err error) error {
	var e *ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return err
	case kube.IsUsage(err):
		return &ExitError{Code: ExitUsage, Err: err}
	}
	return &ExitError{Code: ExitUnevaluated, Err: err}
}

func serviceName(s *corev1.Service) string {
	return "Service " + s.Namespace + "/" + s.Name
}

func addrList(t workstation.Target, answers bool) string {
	a := t.Servers
	if answers {
		a = t.Answers
	}
	out := make([]string, 0, len(a))
	for _, x := range a {
		out = append(out, x.String())
	}
	return strings.Join(out, ", ")
}
