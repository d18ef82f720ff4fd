package facts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
)

// podSecurityEnforce is the namespace label that sets the enforced Pod Security level.
const podSecurityEnforce = "pod-security.kubernetes.io/enforce"

func (g *Gatherer) readDurability(ctx context.Context, m *podMemos, nsLabels map[string]string) Durability {
	d := Durability{Scripts: g.mountedScripts(ctx, m), PodSecurity: nsLabels[podSecurityEnforce]}
	d.Allowlist, d.AllowlistErr = g.kubeletAllowlist(ctx, m.pod.Spec.NodeName)
	if evs, err := g.seams.Client.CoreV1().Events(m.ref.Namespace).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range evs.Items {
			if e.Reason == "SysctlForbidden" {
				d.SysctlForbidden = append(d.SysctlForbidden, fmt.Sprintf("%s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message))
			}
		}
	}
	d.Admissions, d.NotProven = g.proveFixes(ctx, m)
	return d
}

// mountedScripts returns, per volume name, the text of the ConfigMaps the pod mounts.
// Unreadable ConfigMaps are simply not inspected.
func (g *Gatherer) mountedScripts(ctx context.Context, m *podMemos) map[string]string {
	out := map[string]string{}
	for _, v := range m.pod.Spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		cm, err := g.seams.Client.CoreV1().ConfigMaps(m.ref.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		keys := make([]string, 0, len(cm.Data))
		for k := range cm.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			b.WriteString(cm.Data[k])
			b.WriteByte('\n')
		}
		out[v.Name] = b.String()
	}
	return out
}

// kubeletAllowlist reads allowedUnsafeSysctls from the node's kubelet configuration, which
// needs get on nodes/proxy (often not granted: then it is unknown, and said so).
func (g *Gatherer) kubeletAllowlist(ctx context.Context, node string) ([]string, error) {
	if node == "" {
		return nil, errors.New("the pod has no node")
	}
	raw, err := g.seams.Configz(ctx, node)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("the kubelet of node %s does not serve /configz", node)
	case err != nil:
		return nil, fmt.Errorf("kubelet configuration of node %s not readable (needs get on nodes/proxy): %w", node, err)
	}
	var cz struct {
		KubeletConfig struct {
			AllowedUnsafeSysctls []string `json:"allowedUnsafeSysctls"`
		} `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(raw, &cz); err != nil {
		return nil, fmt.Errorf("kubelet configuration of node %s: %w", node, err)
	}
	return cz.KubeletConfig.AllowedUnsafeSysctls, nil
}

// RESTConfigz reads /api/v1/nodes/N/proxy/configz through the clientset's REST client.
func RESTConfigz(client client.Interface) func(ctx context.Context, node string) ([]byte, error) {
	return func(ctx context.Context, node string) ([]byte, error) {
		if client == nil {
			return nil, errors.New("no API client")
		}
		rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient)
		if !ok || rc == nil {
			return nil, errors.New("no REST client to reach the node proxy")
		}
		return rc.Get().AbsPath("/api/v1/nodes", node, "proxy", "configz").DoRaw(ctx)
	}
}
