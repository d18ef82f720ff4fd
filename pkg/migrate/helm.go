package migrate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// HelmValues are the values that move a Traefik chart release to the hostPort form.
type HelmValues struct {
	Release, Namespace, Chart string
	// Values are merged into the release's values (helm upgrade --reuse-values -f FILE):
	// step one, beside the old Service's externalIPs.
	Values map[string]any
	// ExternalIPsKey is the values key that renders the Service's externalIPs ("" when the
	// chart version is not one whose key was read): removing it is the cut-over.
	ExternalIPsKey string
	// Verified says the keys were read from this chart major's values.yaml and rendered by
	// Helm in the tests (testdata/charts/traefik-41.3.0).
	Verified bool
}

// VerifiedTraefikChart is the chart version whose values the plan's keys were read from and
// rendered with (pkg/migrate's TestTraefikChartRendersTheHostPortValues).
const VerifiedTraefikChart = "traefik-41.3.0"

// traefikValues are the Traefik chart's values for the hostPort form, each key read from
// traefik/traefik-helm-chart v41.3.0 (appVersion v3.7.11) traefik/values.yaml and the
// templates that use it:
//   - deployment.kind: DaemonSet (templates/daemonset.yaml renders when it is "DaemonSet",
//     templates/deployment.yaml when it is "Deployment");
//   - ports.<name>.hostPort (templates/_podtemplate.tpl: the container port named <name> gets
//     `hostPort: {{ $config.hostPort }}`);
//   - updateStrategy.type/rollingUpdate.maxUnavailable/maxSurge (daemonset.yaml copies them;
//     the chart's default maxSurge 1 with maxUnavailable 0 cannot roll a hostPort pod);
//   - affinity (_podtemplate.tpl: `affinity: {{ tpl (toYaml .Values.affinity) . }}`) and
//     tolerations (`tolerations: {{ toYaml . }}`), both replaced, not merged, by a values file:
//     they are the live pod template's, with the nodes added.
func traefikValues(o kube.Owner, proxy *part) (*HelmValues, error) {
	ports := map[string]any{}
	for name, hp := range proxy.hostPorts {
		if strings.Contains(name, "/") {
			return nil, failf("the proxy's container port %s has no name: the Traefik chart's ports.<name> cannot be told; name it in the chart's ports", name)
		}
		ports[name] = map[string]any{"hostPort": hp}
	}
	spec := proxy.daemonSet.Spec.Template.Spec
	values := map[string]any{
		"deployment": map[string]any{"kind": "DaemonSet"},
		"ports":      ports,
		"updateStrategy": map[string]any{
			"type":          "RollingUpdate",
			"rollingUpdate": map[string]any{"maxUnavailable": 1, "maxSurge": 0},
		},
		"affinity": spec.Affinity,
	}
	if len(spec.Tolerations) > 0 {
		values["tolerations"] = spec.Tolerations
	}
	v := &HelmValues{
		Release: o.Name, Namespace: o.Namespace, Chart: o.Chart, Values: values,
		ExternalIPsKey: kube.ValuesKey(o.Chart, "Service", "spec.externalIPs"),
		Verified:       chartMajor(o.Chart) == chartMajor(VerifiedTraefikChart),
	}
	if v.Namespace == "" {
		v.Namespace = proxy.oldWorkload.Namespace
	}
	return v, nil
}

// chartMajor is "traefik-41" of "traefik-41.3.0".
func chartMajor(chart string) string {
	name, major := chart, ""
	if i := strings.LastIndex(chart, "-"); i >= 0 {
		name = chart[:i]
		major, _, _ = strings.Cut(chart[i+1:], ".")
	}
	return fmt.Sprintf("%s-%s", name, major)
}

// portNames lists the ports of hostPorts, sorted.
func portNames(hostPorts map[string]int32) []string {
	out := make([]string, 0, len(hostPorts))
	for k := range hostPorts {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
