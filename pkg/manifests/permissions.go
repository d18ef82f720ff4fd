package manifests

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

// Permission is one kind of API call the plugin makes, in RBAC terms (Resource may carry a
// subresource: "pods/exec"), with the checks that need it and the grant that allows it. It is
// the single list that LA001 reviews and that the shipped RBAC is tested against.
type Permission struct {
	Group    string
	Resource string
	Verb     string
	Grant    Grant
	// For lists the checks or commands that need it.
	For []string
}

// Permissions returns every permission the plugin uses, in a stable order.
func Permissions() []Permission {
	var out []Permission
	read := func(group string, resources []string, uses ...string) {
		for _, r := range resources {
			for _, v := range []string{"get", "list"} {
				out = append(out, Permission{Group: group, Resource: r, Verb: v, Grant: GrantDoctor, For: uses})
			}
		}
	}
	read("", []string{"services", "configmaps", "pods", "nodes"}, "discovery", "LA101", "LA102", "LA103", "LA104", "LA105", "LA106", "LA201", "client-config")
	read("discovery.k8s.io", []string{"endpointslices"}, "LA102", "LA103")
	read("apps", []string{"deployments", "replicasets", "statefulsets", "daemonsets"}, "LA105", "VPN003")
	read("policy", []string{"poddisruptionbudgets"}, "LA105")
	read("", []string{"events", "namespaces"}, "VPN003")
	read("networking.k8s.io", []string{"ingresses", "ingressclasses"}, "LA107", "probe host")
	read("networking.k8s.io", []string{"networkpolicies"}, "VPN005")
	read("traefik.io", []string{"ingressroutes", "middlewares"}, "LA107", "probe host")
	read("traefik.containo.us", []string{"ingressroutes", "middlewares"}, "LA107", "probe host")
	read("admissionregistration.k8s.io", []string{"validatingwebhookconfigurations", "validatingadmissionpolicies", "validatingadmissionpolicybindings"}, "LA106")
	read("kyverno.io", []string{"clusterpolicies", "policies"}, "LA106")
	read("templates.gatekeeper.sh", []string{"constrainttemplates"}, "LA106")
	read("constraints.gatekeeper.sh", []string{"k8sexternalips"}, "LA106")
	out = append(out,
		Permission{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews", Verb: "create", Grant: GrantDoctor, For: []string{"LA001"}},
		// The VPN Role also lets vpn-trace find its pods when only the VPN namespace is granted.
		Permission{Group: "", Resource: "pods", Verb: "get", Grant: GrantVPNExec, For: []string{"VPN001"}},
		Permission{Group: "", Resource: "pods", Verb: "list", Grant: GrantVPNExec, For: []string{"VPN001"}},
		Permission{Group: "", Resource: "pods/exec", Verb: "create", Grant: GrantVPNExec, For: []string{"VPN002", "VPN004", "VPN005", "VPN006"}},
		Permission{Group: "", Resource: "nodes/proxy", Verb: "get", Grant: GrantNodeConfigz, For: []string{"VPN003"}},
	)
	for _, v := range []string{"create", "delete", "get", "list", "watch"} {
		out = append(out, Permission{Group: "", Resource: "pods", Verb: v, Grant: GrantHelpers, For: []string{"LA201", "cleanup"}})
	}
	out = append(out, Permission{Group: "", Resource: "pods/exec", Verb: "create", Grant: GrantHelpers, For: []string{"LA201"}})
	return out
}
