package manifests

import "strings"

// Grant names the shipped RBAC manifest that allows a permission.
type Grant string

const (
	// GrantDoctor is the read-only ClusterRole (cluster-wide).
	GrantDoctor Grant = "rbac-doctor"
	// GrantVPNExec is the Role in the VPN pods' namespace.
	GrantVPNExec Grant = "rbac-vpn-exec"
	// GrantNodeConfigz is the optional ClusterRole for the kubelet's configz.
	GrantNodeConfigz Grant = "node-configz"
	// GrantHelpers is the Role in the helper pods' namespace.
	GrantHelpers Grant = "rbac-helpers"
)

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
	// SystemNamespace: kube-system (kube-proxy's configuration, the API server's static pod).
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
	for _, f := range p.For {
		if f == by {
			return true
		}
	}
	return false
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
	read("", "nodes", Cluster, false, "LA101", "LA201")
	read("", "pods", SetupNamespaces, false, "discovery", "LA102", "LA103", "LA105", "LA201", "VPN001")
	read("", "configmaps", SetupNamespaces, false, "discovery", "LA104")
	// kube-proxy's configuration and the API server's flags (DenyServiceExternalIPs).
	read("", "configmaps", SystemNamespace, false, "LA106")
	read("", "pods", SystemNamespace, false, "LA106")
	read("discovery.k8s.io", "endpointslices", SetupNamespaces, false, "LA102", "LA103")
	read("apps", "deployments", SetupNamespaces, false, "LA102", "LA105", "VPN003")
	read("policy", "poddisruptionbudgets", SetupNamespaces, false, "LA105")
	for _, r := range []string{"replicasets", "statefulsets", "daemonsets"} {
		read("apps", r, Cluster, false, "VPN003")
	}
	read("", "events", Cluster, false, "VPN003")
	read("", "namespaces", Cluster, false, "VPN003", "LA106", "LA107")
	read("networking.k8s.io", "ingresses", Cluster, false, "LA107", "probe host")
	read("networking.k8s.io", "ingressclasses", Cluster, false, "LA107", "probe host")
	read("networking.k8s.io", "networkpolicies", Cluster, false, "VPN005")
	for _, g := range []string{"traefik.io", "traefik.containo.us"} {
		read(g, "ingressroutes", Cluster, true, "LA107", "probe host")
		read(g, "middlewares", Cluster, true, "LA107", "probe host")
	}
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
	)
	for _, v := range []string{"create", "delete", "get", "list", "watch"} {
		out = append(out, Permission{Resource: "pods", Verb: v, Grant: GrantHelpers, Scope: HelperNamespace, For: []string{"LA201", "cleanup"}, Optional: true})
	}
	out = append(out, Permission{Resource: "pods/exec", Verb: "create", Grant: GrantHelpers, Scope: HelperNamespace, For: []string{"LA201"}, Optional: true})
	return out
}
