package manifests

import (
	"slices"
	"strings"
)

// Grant names the shipped RBAC manifest (a bundle) that allows a permission.
type Grant string

const (
	// GrantDoctor is the read-only ClusterRole (cluster-wide), the only grant of the
	// ServiceAccount the in-cluster Job and hooks run as.
	GrantDoctor Grant = "rbac-doctor"
	// GrantVPNExec is the opt-in Role in the VPN pods' namespace (exec).
	GrantVPNExec Grant = "rbac-vpn-exec"
	// GrantNodeConfigz is the opt-in ClusterRole for the kubelet's configz (nodes/proxy).
	GrantNodeConfigz Grant = "rbac-node-configz"
	// GrantHelpers is the opt-in Role in the helper pods' namespace.
	GrantHelpers Grant = "rbac-helpers"
	// GrantNodeRead is the opt-in Role in kube-system: exec into the trusted system
	// DaemonSets' pods, which vpn-trace reads the VPN pods' nodes through.
	GrantNodeRead Grant = "rbac-node-read"
)

// ServiceAccount is the ServiceAccount (in namespace lanaccess) each bundle binds its role to:
// one per bundle, so that no opt-in grant lands on the read-only identity the Job runs as.
func (g Grant) ServiceAccount() string {
	switch g {
	case GrantVPNExec:
		return "kubectl-lanaccess-vpn"
	case GrantNodeConfigz:
		return "kubectl-lanaccess-configz"
	case GrantHelpers:
		return "kubectl-lanaccess-helpers"
	case GrantNodeRead:
		return "kubectl-lanaccess-node-read"
	}
	return "kubectl-lanaccess"
}

// Grants lists the bundles, the read-only one first.
func Grants() []Grant {
	return []Grant{GrantDoctor, GrantHelpers, GrantVPNExec, GrantNodeConfigz, GrantNodeRead}
}

// Scope says in which namespaces a permission is exercised.
type Scope int

const (
	// Cluster: all namespaces, or a cluster-scoped resource.
	Cluster Scope = iota
	// SetupNamespaces: the namespaces of the proxy and DNS Services.
	SetupNamespaces
	// HelperNamespace: where LA201's helper pods are created.
	HelperNamespace
	// VPNNamespace: the VPN pods' namespace.
	VPNNamespace
	// SystemNamespace: kube-system (kube-proxy's configuration, the API server's static pod,
	// the trusted system DaemonSets that read nodes).
	SystemNamespace
)

// Permission is one kind of API call the plugin makes, in RBAC terms (Resource may carry a
// subresource: "pods/exec"), with the checks that need it, where, and the grant that allows
// it. It is the single list that LA001 reviews and that the shipped RBAC is tested against.
type Permission struct {
	Group    string
	Resource string
	Verb     string
	Grant    Grant
	Scope    Scope
	// For lists the checks or commands that need it ("discovery" for doctor's discovery).
	For []string
	// Optional permissions serve checks that work without them (helper pods for LA201): a
	// missing one is information, not a warning.
	Optional bool
	// CRD names the custom resource's CRD: asked only when the CRD is installed.
	CRD bool
}

// Split returns the resource and its subresource ("pods/exec" -> "pods", "exec").
func (p Permission) Split() (resource, subresource string) {
	r, sub, _ := strings.Cut(p.Resource, "/")
	return r, sub
}

// Needed reports whether check (or "discovery") needs the permission.
func (p Permission) Needed(by string) bool {
	return slices.Contains(p.For, by)
}

// Permissions returns every permission the plugin uses, in a stable order. Reads are granted
// get and list (what RBAC users expect of a read-only role); the plugin lists.
func Permissions() []Permission {
	var out []Permission
	read := func(group, resource string, scope Scope, crd bool, uses ...string) {
		for _, v := range []string{"get", "list"} {
			out = append(out, Permission{Group: group, Resource: resource, Verb: v, Grant: GrantDoctor, Scope: scope, CRD: crd, For: uses})
		}
	}
	read("", "services", Cluster, false, "discovery", "LA106", "client-config")
	read("", "nodes", Cluster, false, "LA101", "LA201", "LA202", "LA203")
	read("", "pods", SetupNamespaces, false, "discovery", "LA102", "LA103", "LA105", "LA201", "VPN001")
	read("", "configmaps", SetupNamespaces, false, "discovery", "LA104", "LA107")
	// kube-proxy's configuration and the API server's flags (DenyServiceExternalIPs); kube-proxy's
	// static pods and Cilium's cilium-config (LA202). LA202 reads cilium-config in the cilium
	// agent's namespace when that is not kube-system (a Helm release namespace): the shipped
	// ClusterRole already grants ConfigMaps there, and when a custom role does not, LA202 WARNs
	// naming the namespace and the grant, so no namespace is added here.
	read("", "configmaps", SystemNamespace, false, "LA106", "LA202")
	read("", "pods", SystemNamespace, false, "LA106", "LA202")
	read("discovery.k8s.io", "endpointslices", SetupNamespaces, false, "LA102", "LA103")
	read("apps", "deployments", SetupNamespaces, false, "LA102", "LA103", "LA105", "VPN003")
	read("policy", "poddisruptionbudgets", SetupNamespaces, false, "LA105")
	for _, r := range []string{"replicasets", "statefulsets"} {
		read("apps", r, Cluster, false, "VPN003")
	}
	// kube-proxy's, Cilium's and Calico's agents (LA202), the CNI (VPN003).
	read("apps", "daemonsets", Cluster, false, "VPN003", "LA202")
	// LA201 confirms that a node reader's controller is the trusted DaemonSet it names; without
	// the grant it reads through its own helper instead.
	out = append(out, Permission{Group: "apps", Resource: "daemonsets", Verb: "get", Grant: GrantDoctor, Scope: Cluster, For: []string{"LA201"}, Optional: true})
	read("", "events", Cluster, false, "VPN003")
	read("", "namespaces", Cluster, false, "VPN003", "LA106", "LA107")
	read("networking.k8s.io", "ingresses", Cluster, false, "LA107", "probe host")
	read("networking.k8s.io", "ingressclasses", Cluster, false, "LA107", "probe host")
	read("networking.k8s.io", "networkpolicies", Cluster, false, "VPN005")
	// vpn-trace: the pod and Service ranges its pushed routes must cover, the CNI's settings and
	// the policies of the CNIs that have their own (read when their CRDs are installed).
	read("networking.k8s.io", "servicecidrs", Cluster, false, "VPN004")
	read("operator.tigera.io", "installations", Cluster, true, "VPN003", "LA202")
	// Calico's eBPF switch (LA202), in the API group its version serves.
	read("projectcalico.org", "felixconfigurations", Cluster, true, "LA202")
	read("crd.projectcalico.org", "felixconfigurations", Cluster, true, "LA202")
	for _, r := range []string{"networkpolicies", "globalnetworkpolicies"} {
		read("crd.projectcalico.org", r, Cluster, true, "VPN005")
		read("projectcalico.org", r, Cluster, true, "VPN005")
	}
	read("cilium.io", "ciliumnetworkpolicies", Cluster, true, "VPN005")
	read("cilium.io", "ciliumclusterwidenetworkpolicies", Cluster, true, "VPN005")
	for _, g := range []string{"traefik.io", "traefik.containo.us"} {
		read(g, "ingressroutes", Cluster, true, "LA107", "probe host")
		read(g, "middlewares", Cluster, true, "LA107", "probe host")
	}
	read("projectcontour.io", "httpproxies", Cluster, true, "LA107", "probe host")
	for _, r := range []string{"gatewayclasses", "gateways", "httproutes"} {
		read("gateway.networking.k8s.io", r, Cluster, true, "LA107", "probe host")
	}
	read("admissionregistration.k8s.io", "validatingwebhookconfigurations", Cluster, false, "LA106")
	read("admissionregistration.k8s.io", "validatingadmissionpolicies", Cluster, true, "LA106")
	read("admissionregistration.k8s.io", "validatingadmissionpolicybindings", Cluster, true, "LA106")
	read("kyverno.io", "clusterpolicies", Cluster, true, "LA106")
	read("kyverno.io", "policies", Cluster, true, "LA106")
	read("templates.gatekeeper.sh", "constrainttemplates", Cluster, true, "LA106")
	read("constraints.gatekeeper.sh", "k8sexternalips", Cluster, true, "LA106")
	out = append(out,
		Permission{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews", Verb: "create", Grant: GrantDoctor, Scope: Cluster, For: []string{"LA001"}},
		// The VPN Role also lets vpn-trace find its pods when only the VPN namespace is granted.
		Permission{Resource: "pods", Verb: "get", Grant: GrantVPNExec, Scope: VPNNamespace, For: []string{"VPN001"}},
		Permission{Resource: "pods", Verb: "list", Grant: GrantVPNExec, Scope: VPNNamespace, For: []string{"VPN001"}},
		Permission{Resource: "pods/exec", Verb: "create", Grant: GrantVPNExec, Scope: VPNNamespace, For: []string{"VPN002", "VPN004", "VPN005", "VPN006"}},
		Permission{Resource: "nodes/proxy", Verb: "get", Grant: GrantNodeConfigz, Scope: Cluster, For: []string{"VPN003"}, Optional: true},
		// vpn-trace reads the VPN pods' nodes through the trusted system DaemonSets' pods.
		Permission{Resource: "pods/exec", Verb: "create", Grant: GrantNodeRead, Scope: SystemNamespace, For: []string{"VPN003", "VPN005"}, Optional: true},
	)
	for _, v := range []string{"create", "delete", "get", "list"} {
		out = append(out, Permission{Resource: "pods", Verb: v, Grant: GrantHelpers, Scope: HelperNamespace, For: []string{"LA101", "LA201", "LA202", "LA203", "cleanup"}, Optional: true})
	}
	out = append(out, Permission{Resource: "pods/exec", Verb: "create", Grant: GrantHelpers, Scope: HelperNamespace, For: []string{"LA101", "LA201", "LA202", "LA203"}, Optional: true})
	return out
}
