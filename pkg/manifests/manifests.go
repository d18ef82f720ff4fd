// Package manifests ships the YAML a user applies around the plugin: the least-privilege RBAC,
// and examples that run doctor in CI (a Job, a Helm test, an Argo CD PostSync hook, a GitHub
// Actions workflow). They are embedded so that `kubectl lanaccess manifests NAME` prints the copy
// that matches the binary, and tested: every Kubernetes object decodes strictly with client-go's
// scheme, the RBAC covers Permissions(), and the workflow passes actionlint.
//
// The files are text/template templates, with {% %} as delimiters: the examples that run the plugin's image take the
// image reference and an optional CA ConfigMap from Options; yaml/_doctor-pod.tmpl holds the pod
// spec they share.
package manifests

import (
	"bytes"
	"embed"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/lanaccess/kubectl-lanaccess/pkg/imageref"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

//go:embed yaml/*.yaml yaml/*.tmpl yaml/monitor
var files embed.FS

// CAMountPath is where the examples mount the CA ConfigMap; doctor reads CAMountPath/ca.crt.
const CAMountPath = "/etc/lanaccess/proxy-ca"

// TerminationLog is where the Job's container writes what it would write on stderr (--log-file):
// the kubelet's termination message file (corev1.TerminationMessagePathDefault), of which it
// keeps the last 4 KiB in the pod's status; the pod's log is then the JSON report alone.
const TerminationLog = corev1.TerminationMessagePathDefault

// Options fill the examples that run doctor in the cluster.
type Options struct {
	// Image is the plugin's image reference; empty: the one of this binary's version
	// (version.Image()).
	Image string
	// CAConfigMap names a ConfigMap in the lanaccess namespace whose key ca.crt is the private CA
	// of the proxy's certificate: mounted, and passed to doctor as --ca-file. Empty: none.
	CAConfigMap string
}

// DefaultWait is the --wait of the examples that run in the cluster: how long doctor (vpn-trace)
// re-runs after a deploy until everything passes. The Helm tests take it from the value
// lanaccess.wait, with this default.
const DefaultWait = "3m"

// vpnNamespace is the namespace of the VPN pods in the -vpn examples: the one rbac-vpn-exec's
// Role grants exec in (the Helm test's is the release's).
const vpnNamespace = "vpn"

// podData is what the templates read.
type podData struct {
	Image, CAConfigMap, CAMountPath, Output string
	// VPN: the example's vpn-trace variant for the VPN's deploy (VPN001, VPN002 in
	// VPNNamespace), as rbac-vpn-exec's ServiceAccount.
	VPN          bool
	VPNNamespace string
	// LogFile is the --log-file of the Job's container (empty: none).
	LogFile string
	// Wait is the container's --wait, as a double-quoted YAML scalar: DefaultWait, or the Helm
	// test's expression of the value lanaccess.wait.
	Wait string
	// ServiceAccount the pod runs as: rbac-doctor's, or the Helm release's.
	ServiceAccount string
	// Version names the release whose archives the GitHub Actions example downloads: this
	// binary's, or "dev" for a build that is not a release (see version.ImageTag): no such
	// release exists, and the download fails with a 404 rather than install another version.
	Version string
	// Helper is what the helper bundle must agree on with the helper pods the plugin makes.
	Helper helperData
}

// helperData are the names the helper bundle shares with package kube's helper pods: the
// namespace, the image digest and the labels its admission policy checks.
type helperData struct {
	Namespace, Digest, ManagedByLabel, ManagedByValue, OwnersLabel, OwnersAllowed string
}

var helper = helperData{
	Namespace: podexec.DefaultHelperNamespace, Digest: podexec.HelperImageDigest,
	ManagedByLabel: podexec.ManagedByLabel, ManagedByValue: podexec.ManagedByValue,
	OwnersLabel: podexec.HelperOwnersLabel, OwnersAllowed: podexec.HelperOwnersAllowed,
}

// templates are parsed on first use: the commands that print no manifest (doctor's every run,
// version) do not pay for it at start-up.
var templates = sync.OnceValue(func() *template.Template { return template.Must(parseTemplates()) })

func parseTemplates() (*template.Template, error) {
	// {% %}: the GitHub Actions workflow keeps its own ${{ }} expressions.
	t := template.New("manifests").Delims("{%", "%}")
	t.Funcs(template.FuncMap{
		// include renders a named template into a string, for indent.
		"include": func(name string, data any) (string, error) {
			var b strings.Builder
			err := t.ExecuteTemplate(&b, name, data)
			return b.String(), err
		},
		"indent": func(n int, s string) string {
			pad := strings.Repeat(" ", n)
			return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
		},
		"output": func(d podData, output string) podData {
			d.Output = output
			return d
		},
		"logFile": func(d podData) podData {
			d.LogFile = TerminationLog
			return d
		},
		// helm fills the pod spec from the Helm release: its ServiceAccount, the image from
		// the value lanaccess.image, defaulting to d.Image (validated, so safe in quotes), and
		// --wait from the value lanaccess.wait, defaulting to DefaultWait: Helm's quote (Go's
		// %q, whose escapes YAML's double-quoted style reads alike) keeps any value one argument.
		"helm": func(d podData) podData {
			d.ServiceAccount = "{{ .Release.Name }}-lanaccess"
			if d.VPN {
				d.ServiceAccount += "-vpn"
				d.VPNNamespace = "{{ .Release.Namespace }}"
			}
			d.Image = `{{ dig "lanaccess" "image" "` + d.Image + `" .Values.AsMap }}`
			d.Wait = `{{ dig "lanaccess" "wait" "` + DefaultWait + `" .Values.AsMap | quote }}`
			return d
		},
	})
	return t.ParseFS(files, "yaml/*.yaml", "yaml/*.tmpl", "yaml/monitor/*")
}

// Manifest is one printable document set.
type Manifest struct {
	Name        string
	Description string
	// Files are concatenated, in order, as one multi-document YAML stream.
	Files []string
	// VPN renders the files' vpn-trace variant (podData.VPN).
	VPN bool
}

// All lists the manifests in the order help shows them.
func All() []Manifest {
	return []Manifest{
		{Name: "rbac", Description: "the read-only RBAC the Job and hooks run as (= rbac-doctor); the opt-in bundles below have their own ServiceAccounts", Files: []string{"rbac-doctor.yaml"}},
		{Name: "rbac-doctor", Description: "namespace, read-only ServiceAccount and ClusterRole: doctor --no-helpers, vpn-trace's reads, client-config", Files: []string{"rbac-doctor.yaml"}},
		{Name: "rbac-helpers", Description: "opt-in: helper pods for LA201 in their own namespace, admitted by shape (ServiceAccount kubectl-lanaccess-helpers)", Files: []string{"rbac-helpers.yaml"}},
		{Name: "rbac-vpn-exec", Description: "opt-in: exec into the VPN pods' namespace for vpn-trace (ServiceAccount kubectl-lanaccess-vpn)", Files: []string{"rbac-vpn-exec.yaml"}},
		{Name: "rbac-vpn-dryrun", Description: "opt-in: vpn-trace --prove-fixes creates each fixed VPN pod with dryRun=All, i.e. create pods there (ServiceAccount kubectl-lanaccess-vpn-dryrun)", Files: []string{"rbac-vpn-dryrun.yaml"}},
		{Name: "rbac-node-read", Description: "opt-in: vpn-trace reads the VPN pods' nodes through kube-system's trusted DaemonSets, i.e. exec there (ServiceAccount kubectl-lanaccess-node-read)", Files: []string{"rbac-node-read.yaml"}},
		{Name: "rbac-node-configz", Description: "opt-in: the kubelet's configz for VPN003, i.e. nodes/proxy (ServiceAccount kubectl-lanaccess-configz)", Files: []string{"rbac-node-configz.yaml"}},
		{Name: "job", Description: "doctor as an in-cluster Job (no kubeconfig)", Files: []string{"job.yaml"}},
		{Name: "helm-test", Description: "doctor as a Helm test hook (helm test RELEASE)", Files: []string{"helm-test.yaml"}},
		{Name: "argocd", Description: "doctor as an Argo CD PostSync hook", Files: []string{"argocd-postsync.yaml"}},
		{Name: "github-actions", Description: "a GitHub Actions workflow running doctor after a deploy", Files: []string{"github-actions.yaml"}},
		// The VPN's deploy: the same four, running vpn-trace with the opt-in exec grant.
		{Name: "job-vpn", Description: "vpn-trace as an in-cluster Job: ip_forward on in every VPN replica (needs rbac-vpn-exec)", Files: []string{"job.yaml"}, VPN: true},
		{Name: "helm-test-vpn", Description: "vpn-trace as a Helm test hook of the VPN's chart (exec in the release's namespace)", Files: []string{"helm-test.yaml"}, VPN: true},
		{Name: "argocd-vpn", Description: "vpn-trace as an Argo CD PostSync hook of the VPN's deploy (needs rbac-vpn-exec)", Files: []string{"argocd-postsync.yaml"}, VPN: true},
		{Name: "github-actions-vpn", Description: "a GitHub Actions workflow running vpn-trace after the VPN's deploy", Files: []string{"github-actions.yaml"}, VPN: true},
		// kubectl lanaccess monitor (pkg/manifests/monitor_test.go tests them against the monitor).
		{Name: "monitor-rules", Description: "alert rules for the monitor, as a Prometheus rule file", Files: []string{"monitor-rules.yaml"}},
		{Name: "monitor-prometheusrule", Description: "the same alert rules as a PrometheusRule (Prometheus Operator)", Files: []string{"monitor-prometheusrule.yaml"}},
		{Name: "monitor-dashboard", Description: "a Grafana dashboard for the monitor: one row per address, the checks (JSON)", Files: []string{"monitor-dashboard.json"}},
		{Name: "monitor-systemd", Description: "a systemd unit running the monitor on a LAN machine", Files: []string{"kubectl-lanaccess-monitor.service"}},
		{Name: "monitor-container", Description: "the docker/podman command running the monitor on a LAN machine", Files: []string{"monitor-container.sh"}},
	}
}

// Names lists the manifest names.
func Names() []string {
	all := All()
	out := make([]string, 0, len(all))
	for _, m := range all {
		out = append(out, m.Name)
	}
	return out
}

// Get returns the YAML of the manifest called name, with the default Options.
func Get(name string) ([]byte, error) {
	return Render(name, Options{})
}

// Render returns the YAML of the manifest called manifest, filled from o.
func Render(manifest string, o Options) ([]byte, error) {
	data := podData{Image: o.Image, CAConfigMap: o.CAConfigMap, CAMountPath: CAMountPath, ServiceAccount: "kubectl-lanaccess", Wait: strconv.Quote(DefaultWait), Version: version.Get().Version, Helper: helper}
	if version.ImageTag(data.Version) == version.DevTag {
		data.Version = version.DevTag
	}
	if data.Image == "" {
		data.Image = version.Image()
	}
	// Both land in YAML unquoted: only well-formed names pass, which cannot leave their value.
	if _, err := imageref.Parse(data.Image); err != nil {
		return nil, fmt.Errorf("invalid image reference %q: %w", data.Image, err)
	}
	if o.CAConfigMap != "" {
		if errs := validation.IsDNS1123Subdomain(o.CAConfigMap); len(errs) > 0 {
			return nil, fmt.Errorf("invalid ConfigMap name %q: %s", o.CAConfigMap, strings.Join(errs, "; "))
		}
	}
	for _, m := range All() {
		if m.Name != manifest {
			continue
		}
		if m.VPN {
			if o.CAConfigMap != "" {
				return nil, fmt.Errorf("manifest %s runs vpn-trace, which reads no proxy certificate: --ca-configmap is for the doctor examples", manifest)
			}
			data.VPN, data.VPNNamespace, data.ServiceAccount = true, vpnNamespace, "kubectl-lanaccess-vpn"
		}
		var docs []string
		for _, f := range m.Files {
			var b bytes.Buffer
			if err := templates().ExecuteTemplate(&b, f, data); err != nil {
				return nil, fmt.Errorf("manifest %s: %w", manifest, err)
			}
			docs = append(docs, strings.TrimRight(b.String(), "\n")+"\n")
		}
		return []byte(strings.Join(docs, "---\n")), nil
	}
	return nil, fmt.Errorf("no manifest %q (choose from %s)", manifest, strings.Join(Names(), ", "))
}
