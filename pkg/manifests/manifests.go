// Package manifests ships the YAML a user applies around the plugin: the least-privilege RBAC,
// and examples that run doctor in CI (a Job, a Helm test, an Argo CD PostSync hook, a GitHub
// Actions workflow). They are embedded so that `kubectl lanaccess manifests NAME` prints the copy
// that matches the binary, and tested: every Kubernetes object decodes strictly with client-go's
// scheme, the RBAC covers Permissions(), and the workflow passes actionlint.
package manifests

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed yaml/*.yaml yaml/monitor
var files embed.FS

// Manifest is one printable document set.
type Manifest struct {
	Name        string
	Description string
	// Files are concatenated, in order, as one multi-document YAML stream.
	Files []string
}

// All lists the manifests in the order help shows them.
func All() []Manifest {
	return []Manifest{
		{Name: "rbac", Description: "all the RBAC below: read-only doctor, exec into VPN pods, helper pods", Files: []string{"rbac-doctor.yaml", "rbac-vpn-exec.yaml", "rbac-helpers.yaml"}},
		{Name: "rbac-doctor", Description: "namespace, ServiceAccount and read-only ClusterRole for doctor --no-helpers and client-config", Files: []string{"rbac-doctor.yaml"}},
		{Name: "rbac-vpn-exec", Description: "exec into the VPN pods' namespace for vpn-trace, and the optional kubelet configz grant", Files: []string{"rbac-vpn-exec.yaml"}},
		{Name: "rbac-helpers", Description: "helper pods in the lanaccess namespace for the node listener check LA201", Files: []string{"rbac-helpers.yaml"}},
		{Name: "job", Description: "doctor as an in-cluster Job (no kubeconfig)", Files: []string{"job.yaml"}},
		{Name: "helm-test", Description: "doctor as a Helm test hook (helm test RELEASE)", Files: []string{"helm-test.yaml"}},
		{Name: "argocd", Description: "doctor as an Argo CD PostSync hook", Files: []string{"argocd-postsync.yaml"}},
		{Name: "github-actions", Description: "a GitHub Actions workflow running doctor after a deploy", Files: []string{"github-actions.yaml"}},
		// kubectl lanaccess monitor (pkg/manifests/monitor_test.go tests them against the monitor).
		{Name: "monitor-rules", Description: "alert rules for the monitor, as a Prometheus rule file", Files: []string{"monitor/rules.yaml"}},
		{Name: "monitor-prometheusrule", Description: "the same alert rules as a PrometheusRule (Prometheus Operator)", Files: []string{"monitor/prometheusrule.yaml"}},
		{Name: "monitor-dashboard", Description: "a Grafana dashboard for the monitor: one row per address, the checks (JSON)", Files: []string{"monitor/dashboard.json"}},
		{Name: "monitor-systemd", Description: "a systemd unit running the monitor on a LAN machine", Files: []string{"monitor/kubectl-lanaccess-monitor.service"}},
		{Name: "monitor-container", Description: "the docker/podman command running the monitor on a LAN machine", Files: []string{"monitor/container.sh"}},
	}
}

// Names lists the manifest names.
func Names() []string {
	var out []string
	for _, m := range All() {
		out = append(out, m.Name)
	}
	return out
}

// Get returns the YAML of the manifest called name.
func Get(name string) ([]byte, error) {
	for _, m := range All() {
		if m.Name != name {
			continue
		}
		var docs []string
		for _, f := range m.Files {
			b, err := files.ReadFile("yaml/" + f)
			if err != nil {
				return nil, fmt.Errorf("manifest %s: %w", name, err)
			}
			docs = append(docs, strings.TrimRight(string(b), "\n")+"\n")
		}
		return []byte(strings.Join(docs, "---\n")), nil
	}
	return nil, fmt.Errorf("no manifest %q (choose from %s)", name, strings.Join(Names(), ", "))
}
