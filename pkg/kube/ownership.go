package kube

import (
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// Objects installed by Helm, Argo CD or k3s's deploy controller are rendered again by them: a
// kubectl patch of a rendered field is set back at the next upgrade, sync or restart. A fix
// must name where the field really lives (a chart's values key) and say that a direct patch
// will not last. The markers below are what those tools write on the objects they own.

// Owner is the tool that renders an object.
type Owner struct {
	// Tool is "Helm", "Argo CD" or "k3s".
	Tool string
	// Release (Helm) or Application (Argo CD) and its namespace; for k3s, the manifest.
	Name, Namespace string
	// Chart is the helm.sh/chart label ("traefik-41.3.0"), "" when unknown.
	Chart string
}

// Reverts says when the owner sets a direct change back.
func (o Owner) Reverts() string {
	switch o.Tool {
	case "Argo CD":
		return "Argo CD sets a direct change back at the next sync (at once with selfHeal)"
	case "k3s":
		return "k3s rewrites it from its manifests at every server start"
	}
	return "the next helm upgrade sets a direct change back"
}

// Describe is "the Helm release traefik (namespace traefik, chart traefik-41.3.0)".
func (o Owner) Describe() string {
	var s string
	switch o.Tool {
	case "Argo CD":
		s = "the Argo CD Application " + o.Name
	case "k3s":
		s = "k3s's deploy controller"
		if o.Name != "" {
			s += " (manifest " + o.Name + ")"
		}
	default:
		s = "the Helm release " + o.Name
	}
	var parts []string
	if o.Namespace != "" {
		parts = append(parts, "namespace "+o.Namespace)
	}
	if o.Chart != "" {
		parts = append(parts, "chart "+o.Chart)
	}
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// OwnerOf reads who renders obj. Argo CD's annotation tracking (argocd.argoproj.io/tracking-id,
// the default since Argo CD 3.0) wins over Helm's labels, which a chart writes whoever
// installs it; a Helm release is told by meta.helm.sh/release-name, which only `helm install`
// and `helm upgrade` write (helm pkg/action/validate.go setMetadataVisitor); k3s's deploy
// controller applies its manifests with wrangler's apply, owned by an Addon: it writes
// objectset.rio.cattle.io/owner-gvk "k3s.cattle.io/v1, Kind=Addon" and owner-name (the
// manifest's name), and an objectset.rio.cattle.io/id that is empty (the k3s corpus cases
// show both, as k3s v1.31 wrote them).
func OwnerOf(obj metav1.Object) (Owner, bool) {
	a, l := obj.GetAnnotations(), obj.GetLabels()
	chart := l["helm.sh/chart"]
	if id := a["argocd.argoproj.io/tracking-id"]; id != "" {
		app, _, _ := strings.Cut(id, ":") // "APP:GROUP/KIND:NAMESPACE/NAME"
		return Owner{Tool: "Argo CD", Name: app, Chart: chart}, true
	}
	if rel := a["meta.helm.sh/release-name"]; rel != "" {
		return Owner{Tool: "Helm", Name: rel, Namespace: a["meta.helm.sh/release-namespace"], Chart: chart}, true
	}
	if strings.Contains(a["objectset.rio.cattle.io/owner-gvk"], "k3s.cattle.io/") {
		return Owner{Tool: "k3s", Name: a["objectset.rio.cattle.io/owner-name"]}, true
	}
	if id, ok := a["objectset.rio.cattle.io/id"]; ok {
		return Owner{Tool: "k3s", Name: id}, true
	}
	return Owner{}, false
}

// ValuesKey names the chart values key that renders field (a path in the object, e.g.
// "spec.externalIPs") of a kind, for the charts the setup is known to be installed with; "" when
// the chart or the field is not known. The keys were read from the charts' templates (the
// corpus cases in testdata/corpus name the chart versions and values used).
func ValuesKey(chart, kind, field string) string {
	name, version := splitChart(chart)
	switch {
	case name == "traefik" && kind == "Service" && field == "spec.externalIPs":
		// traefik-helm-chart: chart 27 (the one k3s bundles) renders service.externalIPs;
		// chart 41 renders the Service's spec fields from service.spec. The versions between
		// were not read: no key is named for them rather than a guessed one.
		switch version {
		case 27:
			return "service.externalIPs"
		case 41:
			return "service.spec.externalIPs"
		}
	case name == "coredns" && kind == "Service" && field == "spec.externalIPs":
		return "service.externalIPs" // coredns/helm templates/service.yaml (coredns-1.46.2)
	case name == "coredns" && kind == "Service" && field == "spec.ports":
		return "servers[].zones[].use_tcp" // templates/_helpers.tpl coredns.servicePorts
	case name == "coredns" && kind == "Deployment" && field == "spec.template.spec.dnsPolicy":
		// templates/deployment.yaml writes dnsPolicy only under isClusterService.
		return "isClusterService: true with deployment.dnsPolicy: Default"
	case name == "coredns" && kind == "ConfigMap" && field == "data.Corefile":
		return "servers"
	}
	return ""
}

// splitChart reads "traefik-41.3.0" as ("traefik", 41).
func splitChart(chart string) (string, int) {
	i := strings.LastIndex(chart, "-")
	if i < 0 {
		return chart, 0
	}
	major, _, _ := strings.Cut(chart[i+1:], ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return chart, 0
	}
	return chart[:i], n
}

// ManagedNote is the comment a remediation puts before a direct patch of an owned object: who
// renders it, that the patch will not last, and where the field really lives.
func ManagedNote(obj metav1.Object, kind, field string) string {
	o, ok := OwnerOf(obj)
	if !ok {
		return ""
	}
	ref := kubeobj.Ref(kind, obj.GetNamespace(), obj.GetName())
	note := remedy.Commentf("# %s belongs to %s: %s.\n", ref, o.Describe(), o.Reverts())
	if key := ValuesKey(o.Chart, kind, field); key != "" {
		where := "the values of " + o.Describe()
		if o.Tool == "Argo CD" {
			where = "the Application's Helm values in Git"
		}
		note += remedy.Commentf("# Set %s in %s (values key %s); the patch below only bridges until then:\n", field, where, key)
	} else if o.Tool == "Helm" && o.Chart == "" {
		// A chart's own templates write helm.sh/chart (Helm's chart best practices; the
		// traefik and coredns charts do); an object without it came verbatim from the
		// release's values, as the seed's lan-dns objects do through the Traefik chart's
		// extraObjects (corpus case traefik-41-seed-extraobjects-verbatim).
		note += remedy.Commentf("# It has no helm.sh/chart label: it comes verbatim from the release's values (e.g. the Traefik chart's extraObjects). Change %s in that values entry; the patch below only bridges until then:\n", field)
	} else {
		note += remedy.Commentf("# Change %s where %s renders it; the patch below only bridges until then:\n", field, o.Describe())
	}
	return note
}
