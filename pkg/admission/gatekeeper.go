package admission

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// Gatekeeper constraints about externalIPs. The gatekeeper-library's k8sexternalips template
// (library/general/externalip/template.yaml) reports a violation when a Service's externalIPs
// are not all in parameters.allowedIPs: it compares addresses only, whoever asks and from
// whichever namespace. A constraint selects requests with spec.match (kinds, namespaces and
// excludedNamespaces with prefix or suffix globs, labelSelector, namespaceSelector); its
// enforcementAction deny (the default) refuses, dryrun and warn only report. Gatekeeper
// checks CREATE and UPDATE alike: a Service that violates cannot be updated any more. The
// constraints run only while Gatekeeper's webhook covers the request (its configuration's
// namespaceSelector exempts gatekeeper-system and namespaces labelled
// admission.gatekeeper.sh/ignore). Other templates' rego is not evaluated: unknown.

// GatekeeperConstraints returns a Control per constraint of a template about externalIPs.
func GatekeeperConstraints(templates, constraints []unstructured.Unstructured, webhooks []admissionregistrationv1.ValidatingWebhookConfiguration, webhooksKnown bool) []Control {
	library := map[string]bool{}
	for _, t := range templates {
		kind, _, _ := unstructured.NestedString(t.Object, "spec", "crd", "spec", "names", "kind")
		library[kind] = isExternalIPsLibraryTemplate(t)
	}
	out := make([]Control, 0, len(constraints))
	for _, c := range constraints {
		out = append(out, gatekeeperConstraint(c, library[c.GetKind()], webhooks, webhooksKnown))
	}
	return out
}

// isExternalIPsLibraryTemplate recognises the library's k8sexternalips rego (or a copy of it).
func isExternalIPsLibraryTemplate(t unstructured.Unstructured) bool {
	targets, _, _ := unstructured.NestedSlice(t.Object, "spec", "targets")
	for _, x := range targets {
		m, _ := x.(map[string]any)
		rego, _ := m["rego"].(string)
		compact := strings.Join(strings.Fields(rego), "")
		if strings.Contains(compact, "input.parameters.allowedIPs[_]") && strings.Contains(compact, "input.review.object.spec.externalIPs[_]") &&
			strings.Contains(compact, "forbiddenIPs:=externalIPs-allowedIPs") && strings.Contains(compact, "count(forbiddenIPs)>0") {
			return true
		}
	}
	return false
}

func gatekeeperConstraint(c unstructured.Unstructured, library bool, webhooks []admissionregistrationv1.ValidatingWebhookConfiguration, webhooksKnown bool) Control {
	ctl := Control{What: fmt.Sprintf("Gatekeeper %s %s", c.GetKind(), c.GetName())}
	action, _, _ := unstructured.NestedString(c.Object, "spec", "enforcementAction")
	kind := strings.ToLower(c.GetKind()) + ".constraints.gatekeeper.sh"
	ctl.Remove = remedy.Kubectl("", "delete", kind, c.GetName())
	switch strings.ToLower(action) {
	case "", "deny":
		ctl.Enforcing = true
	case "scoped":
		ctl.Enforcing = scopedDeny(c)
		if !ctl.Enforcing {
			ctl.NotEnforcedWhy = "its scopedEnforcementActions do not deny at the validation webhook"
		}
	default:
		ctl.NotEnforcedWhy = "enforcementAction is " + action
		ctl.Remedy = remedy.MergePatch("", kind, c.GetName(), map[string]any{"spec": map[string]any{"enforcementAction": "deny"}})
	}
	var webhook *admissionregistrationv1.ValidatingWebhook
	if webhooksKnown {
		wh, ok := gatekeeperWebhook(webhooks)
		if !ok {
			ctl.Enforcing = false
			ctl.NotEnforcedWhy = joinWhy(ctl.NotEnforcedWhy, "Gatekeeper's validating webhook does not cover Services: Gatekeeper is not running, so the constraint is not applied")
			ctl.Remedy = "kubectl get validatingwebhookconfiguration gatekeeper-validating-webhook-configuration -o yaml   # is Gatekeeper running?"
		} else {
			webhook = &wh
			if wh.FailurePolicy != nil && *wh.FailurePolicy == admissionregistrationv1.Ignore {
				ctl.Notes = append(ctl.Notes, "Gatekeeper's webhook has failurePolicy Ignore: while Gatekeeper is down, Services are not checked")
			}
		}
	}
	ctl.Notes = append(ctl.Notes, "namespaces exempted in Gatekeeper's Config or by its --exempt-namespace flags are not read")
	allowedIPs, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "parameters", "allowedIPs")
	ctl.violates = func(r Request) Verdict {
		if webhook != nil && !webhookSelects(*webhook, r) {
			return allowed("Gatekeeper's webhook does not select namespace %s", r.Object.Namespace)
		}
		if ok, why := gatekeeperMatches(c, r); !ok {
			return allowed("its match does not select it (%s)", why)
		}
		if !library {
			return unknown("its template's rego is not the library's k8sexternalips, and is not evaluated")
		}
		for _, ip := range r.Object.Spec.ExternalIPs {
			if !slices.Contains(allowedIPs, ip) {
				return denied("%s is not in allowedIPs", ip)
			}
		}
		if len(r.Object.Spec.ExternalIPs) == 0 {
			return allowed("no externalIPs")
		}
		return allowed("every externalIP is in allowedIPs, which it checks whatever the namespace")
	}
	return ctl
}

// scopedDeny reports whether a constraint with enforcementAction scoped denies at the webhook.
func scopedDeny(c unstructured.Unstructured) bool {
	list, _, _ := unstructured.NestedSlice(c.Object, "spec", "scopedEnforcementActions")
	for _, x := range list {
		m, _ := x.(map[string]any)
		if a, _ := m["action"].(string); !strings.EqualFold(a, "deny") {
			continue
		}
		points, _ := m["enforcementPoints"].([]any)
		for _, p := range points {
			pm, _ := p.(map[string]any)
			if n, _ := pm["name"].(string); n == "validation.gatekeeper.sh" || n == "*" {
				return true
			}
		}
	}
	return false
}

// gatekeeperWebhook finds Gatekeeper's validation webhook covering Services.
func gatekeeperWebhook(webhooks []admissionregistrationv1.ValidatingWebhookConfiguration) (admissionregistrationv1.ValidatingWebhook, bool) {
	for _, cfg := range webhooks {
		for _, h := range cfg.Webhooks {
			if h.Name == "validation.gatekeeper.sh" && coversServices(h.Rules) {
				return h, true
			}
		}
	}
	return admissionregistrationv1.ValidatingWebhook{}, false
}

// webhookSelects applies a webhook's namespaceSelector and objectSelector to r.
func webhookSelects(h admissionregistrationv1.ValidatingWebhook, r Request) bool {
	for _, pair := range []struct {
		sel    *metav1.LabelSelector
		labels map[string]string
	}{{h.NamespaceSelector, r.NamespaceObject().Labels}, {h.ObjectSelector, r.Object.Labels}} {
		if pair.sel == nil {
			continue
		}
		s, err := metav1.LabelSelectorAsSelector(pair.sel)
		if err != nil || !s.Matches(labels.Set(pair.labels)) {
			return false
		}
	}
	return true
}

type gatekeeperKinds struct {
	APIGroups []string `json:"apiGroups"`
	Kinds     []string `json:"kinds"`
}

// gatekeeperMatch is a constraint's spec.match.
type gatekeeperMatch struct {
	Kinds              []gatekeeperKinds     `json:"kinds"`
	Scope              string                `json:"scope"`
	Namespaces         []string              `json:"namespaces"`
	ExcludedNamespaces []string              `json:"excludedNamespaces"`
	LabelSelector      *metav1.LabelSelector `json:"labelSelector"`
	NamespaceSelector  *metav1.LabelSelector `json:"namespaceSelector"`
	Name               string                `json:"name"`
}

func gatekeeperMatches(c unstructured.Unstructured, r Request) (bool, string) {
	raw, ok, _ := unstructured.NestedMap(c.Object, "spec", "match")
	if !ok {
		return true, ""
	}
	var m gatekeeperMatch
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &m); err != nil {
		return false, "spec.match does not read: " + err.Error()
	}
	if len(m.Kinds) > 0 && !slices.ContainsFunc(m.Kinds, func(k gatekeeperKinds) bool {
		return (slices.Contains(k.APIGroups, "") || slices.Contains(k.APIGroups, "*")) && (slices.Contains(k.Kinds, "Service") || slices.Contains(k.Kinds, "*"))
	}) {
		return false, "kinds"
	}
	if m.Scope == "Cluster" {
		return false, "scope Cluster"
	}
	ns := r.Object.Namespace
	if len(m.Namespaces) > 0 && !slices.ContainsFunc(m.Namespaces, func(p string) bool { return wildcard(p, ns) }) {
		return false, "namespaces"
	}
	if slices.ContainsFunc(m.ExcludedNamespaces, func(p string) bool { return wildcard(p, ns) }) {
		return false, "excludedNamespaces has " + ns
	}
	if m.Name != "" && !wildcard(m.Name, r.Object.Name) {
		return false, "name"
	}
	for _, pair := range []struct {
		sel    *metav1.LabelSelector
		labels map[string]string
		what   string
	}{{m.LabelSelector, r.Object.Labels, "labelSelector"}, {m.NamespaceSelector, r.NamespaceObject().Labels, "namespaceSelector"}} {
		if pair.sel == nil {
			continue
		}
		s, err := metav1.LabelSelectorAsSelector(pair.sel)
		if err != nil || !s.Matches(labels.Set(pair.labels)) {
			return false, pair.what
		}
	}
	return true, ""
}
