package vpn

import (
	"fmt"
	"maps"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// Calico's and Cilium's own policies that select the VPN pod or the ladder's pod: named, not
// evaluated (VPN005, and VPN008's policy-or-CNI verdict).

// endpoint is a pod as a CNI's policy selects it: its labels and its namespace's.
type endpoint struct {
	What      string
	Namespace string
	Labels    map[string]string
	NSLabels  map[string]string
}

// cniPolicyFindings names the CNIs' policies that select the VPN pod or the ladder's pod: they
// are not evaluated, and a drop there looks like the CNI's.
func cniPolicyFindings(run *facts.Run, p *facts.Pod) []engine.Finding {
	eps := []endpoint{{What: "the VPN pod", Namespace: p.Ref.Namespace, Labels: p.Pod.Labels, NSLabels: p.NamespaceLabels}}
	if t := run.Targets.Pod; t != nil {
		eps = append(eps, endpoint{What: "the ladder's pod", Namespace: t.Namespace, Labels: t.Labels, NSLabels: run.Targets.PodNamespaceLabels})
	}
	hits := selectingCNIPolicies(run.CNIPolicies, eps)
	if len(hits) == 0 {
		return nil
	}
	return []engine.Finding{{Code: "VPN005-CNI-POLICIES", Severity: engine.SeverityWarn, Object: p.Object(),
		Evidence: map[string]any{"policies": hits},
		Message:  "the CNI's own policies select these pods and are not evaluated here, so what they drop looks like the CNI: " + strings.Join(hits, "; ")}}
}

// selectingCNIPolicies lists the policies that select (or may select) one of eps.
func selectingCNIPolicies(kinds []facts.PolicyKind, eps []endpoint) []string {
	var hits []string
	for _, k := range kinds {
		for _, item := range k.Items {
			var who []string
			for _, ep := range eps {
				switch sel, known := selectsEndpoint(k.Kind, item, ep); {
				case !known:
					who = append(who, "maybe "+ep.What)
				case sel:
					who = append(who, ep.What)
				}
			}
			if len(who) > 0 {
				name := item.GetName()
				if item.GetNamespace() != "" {
					name = item.GetNamespace() + "/" + name
				}
				hits = append(hits, fmt.Sprintf("%s %s (selects %s)", k.Kind, name, strings.Join(who, ", ")))
			}
		}
	}
	return hits
}

// selectsEndpoint evaluates a policy's endpoint selection; known is false when its selector
// uses what this reading does not evaluate.
func selectsEndpoint(kind string, item unstructured.Unstructured, ep endpoint) (selects, known bool) {
	if ns := item.GetNamespace(); ns != "" && ns != ep.Namespace {
		return false, true // namespaced policies select their namespace's pods only
	}
	if strings.HasPrefix(kind, "Cilium") {
		return ciliumSelects(item, ep)
	}
	sel, _, _ := unstructured.NestedString(item.Object, "spec", "selector")
	podLabels := map[string]string{"projectcalico.org/namespace": ep.Namespace, "projectcalico.org/orchestrator": "k8s"}
	maps.Copy(podLabels, ep.Labels)
	selects, known = calicoSelects(sel, podLabels)
	if nsSel, ok, _ := unstructured.NestedString(item.Object, "spec", "namespaceSelector"); ok && selects {
		nsLabels := map[string]string{"projectcalico.org/name": ep.Namespace}
		maps.Copy(nsLabels, ep.NSLabels)
		nsSelects, nsKnown := calicoSelects(nsSel, nsLabels)
		return nsSelects, known && nsKnown
	}
	return selects, known
}

// ciliumSelects evaluates spec.endpointSelector, a label selector whose keys carry a source
// prefix ("k8s:", "any:"); the pod's namespace is the label io.kubernetes.pod.namespace.
func ciliumSelects(item unstructured.Unstructured, ep endpoint) (bool, bool) {
	raw, found, _ := unstructured.NestedMap(item.Object, "spec", "endpointSelector")
	if !found {
		return false, false // nodeSelector or specs[]: not evaluated
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return false, false
	}
	norm := metav1.LabelSelector{MatchLabels: map[string]string{}}
	for k, v := range ls.MatchLabels {
		key, ok := ciliumKey(k)
		if !ok {
			return false, false
		}
		norm.MatchLabels[key] = v
	}
	for _, e := range ls.MatchExpressions {
		key, ok := ciliumKey(e.Key)
		if !ok {
			return false, false
		}
		e.Key = key
		norm.MatchExpressions = append(norm.MatchExpressions, e)
	}
	sel, err := metav1.LabelSelectorAsSelector(&norm)
	if err != nil {
		return false, false
	}
	l := labels.Set{"io.kubernetes.pod.namespace": ep.Namespace}
	maps.Copy(l, ep.Labels)
	return sel.Matches(l), true
}

func ciliumKey(k string) (string, bool) {
	switch {
	case strings.HasPrefix(k, "k8s:"):
		return strings.TrimPrefix(k, "k8s:"), true
	case strings.HasPrefix(k, "any:"):
		return strings.TrimPrefix(k, "any:"), true
	case strings.Contains(k, ":"):
		return "", false // reserved:, cidr:...: not a pod label
	}
	return k, true
}

// calicoTerm is one term of the Calico selector subset evaluated here: all(), has(k),
// !has(k), k == 'v', k != 'v', k in {'a', 'b'}; terms joined by &&.
var calicoTerm = regexp.MustCompile(`^(?:(all\(\))|(!?)has\(([\w./-]+)\)|([\w./-]+)\s*(==|!=)\s*['"]([^'"]*)['"]|([\w./-]+)\s+in\s+\{([^}]*)\})$`)

// calicoSelects evaluates a Calico selector on labels; known is false for syntax outside the
// subset (||, parentheses, not in, contains...).
func calicoSelects(sel string, l map[string]string) (bool, bool) {
	sel = strings.TrimSpace(sel)
	if sel == "" {
		return true, true // an empty selector is all()
	}
	if strings.Contains(sel, "||") {
		return false, false
	}
	result := true
	for term := range strings.SplitSeq(sel, "&&") {
		m := calicoTerm.FindStringSubmatch(strings.TrimSpace(term))
		if m == nil {
			return false, false
		}
		switch {
		case m[1] != "":
		case m[3] != "":
			_, ok := l[m[3]]
			result = result && ok == (m[2] == "")
		case m[4] != "":
			v, ok := l[m[4]]
			result = result && (ok && v == m[6]) == (m[5] == "==")
		case m[7] != "":
			in := false
			for want := range strings.SplitSeq(m[8], ",") {
				in = in || l[m[7]] == strings.Trim(strings.TrimSpace(want), `'"`)
			}
			_, has := l[m[7]]
			result = result && has && in
		}
	}
	return result, true
}
