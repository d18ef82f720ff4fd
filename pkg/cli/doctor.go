package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/checks"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
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
	Image          string
	HelperNS       string
}

func newDoctorCommand(kubeFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, connect clientFactory) *cobra.Command {
	f := &DoctorFlags{Checks: NewCheckFlags(), ExpectStatus: checks.DefaultExpectStatus, OutsideName: checks.DefaultOutsideName}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Diagnose LAN access: Services with externalIPs, the zone CoreDNS, node listeners, DNS and HTTPS paths",
		Example: `  # everything, discovering the proxy, the DNS Service, the ConfigMap and the zone
  kubectl lanaccess doctor

  # read-only, as JSON, warnings fail the run (CI after a deploy, retrying for 3 minutes)
  kubectl lanaccess doctor --no-helpers --fail-on=warn --wait 3m --junit-file report.xml

  # name the objects and the probe host explicitly
  kubectl lanaccess doctor --proxy-service traefik/traefik --dns-service lan-dns/lan-dns --host grafana.apps.example.com`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.Checks.Complete(cmd); err != nil {
				return err
			}
			if err := checks.ValidateExpectLocation(f.ExpectLocation); err != nil {
				return usageErr("invalid --expect-location: %v", err)
			}
			if f.ExpectStatus < 100 || f.ExpectStatus > 599 {
				return usageErr("invalid --expect-status %d: an HTTP status such as 302", f.ExpectStatus)
			}
			sel := kube.Selection{ProxyService: f.ProxyService, DNSService: f.DNSService, ConfigMap: f.ConfigMap, Zone: f.Zone, AllNamespaces: f.AllNamespaces}
			if sel.Namespace = namespaceGiven(cmd); sel.Namespace == "" || f.AllNamespaces {
				sel.Namespace, sel.AllNamespaces = "", true
			}
			return runChecks(cmd.Context(), streams, f.Checks, "doctor", f.prepare(kubeFlags, sel, connect))
		},
	}
	fs := cmd.Flags()
	f.Checks.AddFlags(fs)
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
	fs.StringVar(&f.Image, "image", "", "image of the helper pods (default a pinned busybox; set it for air-gapped clusters)")
	fs.StringVar(&f.HelperNS, "helper-namespace", "default", "namespace for helper pods (must admit hostNetwork pods)")
	return cmd
}

func (f *DoctorFlags) prepare(kubeFlags *genericclioptions.ConfigFlags, sel kube.Selection, connect clientFactory) attemptFunc {
	return func(ctx context.Context, progress *report.Progress) ([]engine.Check, report.Report, func(), error) {
		c, err := connect(kubeFlags, 10*time.Second)
		if err != nil {
			return nil, report.Report{}, nil, err
		}
		header := report.Report{Cluster: c.cluster}
		progress.Message("discovering the setup…")
		setup, err := kube.Discover(ctx, c.typed, c.dynamic, sel)
		if err != nil {
			if kube.IsUsage(err) {
				return nil, header, nil, err
			}
			return nil, header, nil, fmt.Errorf("could not read the cluster at %s (context %s): %w", c.cluster.Server, c.cluster.Context, err)
		}
		setup.APIWarnings = append(setup.APIWarnings, c.warnings.Warnings()...)
		env := &checks.Env{
			Client: c.typed, Dynamic: c.dynamic, Setup: setup, Facts: &checks.Facts{},
			Options: checks.Options{
				ProbeHost: f.Host, OutsideName: f.OutsideName, ProbeTimeout: f.Checks.Timeout,
				ExpectStatus: f.ExpectStatus, ExpectLocation: f.ExpectLocation, Insecure: f.Insecure,
				CAFile: f.CAFile, NoHelpers: f.NoHelpers, Image: f.Image, HelperNamespace: f.HelperNS,
			},
		}
		cleanup, err := wireRuntime(env, c)
		if err != nil {
			return nil, header, nil, err
		}
		header.Subject = describeSetup(setup)
		return checks.DoctorSuite(env), header, cleanup, nil
	}
}

func describeSetup(s *kube.Setup) []report.KV {
	var kv []report.KV
	if s.ProxyService != nil {
		kv = append(kv, report.KV{Key: "proxy", Value: fmt.Sprintf("Service %s/%s externalIPs %s", s.ProxyService.Namespace, s.ProxyService.Name, strings.Join(s.ProxyService.Spec.ExternalIPs, ","))})
	}
	if s.DNSService != nil {
		kv = append(kv, report.KV{Key: "dns", Value: fmt.Sprintf("Service %s/%s externalIPs %s", s.DNSService.Namespace, s.DNSService.Name, strings.Join(s.DNSService.Spec.ExternalIPs, ","))})
	}
	if s.ConfigMap != nil {
		kv = append(kv, report.KV{Key: "corefile", Value: fmt.Sprintf("ConfigMap %s/%s key %s", s.ConfigMap.Namespace, s.ConfigMap.Name, s.CorefileKey)})
	}
	if s.Zone != "" {
		kv = append(kv, report.KV{Key: "zone", Value: s.Zone})
	}
	return kv
}
