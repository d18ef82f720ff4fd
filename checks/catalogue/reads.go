package catalogue

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	m "github.com/lanaccess/kubectl-lanaccess/pkg/manifests"
)

// What the entries read, named once (Entry.Reads lists them): the rows of every RBAC bundle
// (Permissions), LA001's access reviews and the "not read" notes of the checks are derived from
// these declarations, and checks/reads_test.go fails when a check reads something its entry
// does not declare.
var (
	// discoveryCore is what discovery needs to find the setup: the Services, and the pods and
	// Corefile ConfigMaps of the proxy's and DNS's namespaces.
	discoveryCore = reads(services, setupPods, corefile)
	services      = []m.Read{m.Reads("", m.Cluster, "services")}
	setupPods     = []m.Read{m.Reads("", m.SetupNamespaces, "pods")}
	// routes are the proxy's routes: Ingresses, Traefik's, Contour's and the Gateway API's
	// (discovery's route model, the probe host and LA107).
	routes = []m.Read{
		m.Reads("networking.k8s.io", m.Cluster, "ingresses", "ingressclasses"),
		m.CustomReads("traefik.io", "ingressroutes", "middlewares", "ingressroutetcps", "ingressrouteudps"),
		m.CustomReads("traefik.containo.us", "ingressroutes", "middlewares", "ingressroutetcps", "ingressrouteudps"),
		m.CustomReads("projectcontour.io", "httpproxies"),
		m.CustomReads("security.istio.io", "authorizationpolicies"),
		m.CustomReads("gateway.networking.k8s.io", "gatewayclasses", "gateways", "httproutes", "referencegrants"),
	}
	accessReview = []m.Read{{Group: "authorization.k8s.io", Resources: []string{"selfsubjectaccessreviews"}, Verbs: []string{"create"}}}
	nodes        = []m.Read{m.Reads("", m.Cluster, "nodes")}
	// workloads are the Services' backends in the setup's namespaces.
	workloads   = reads(setupPods, deployments, []m.Read{m.Reads("discovery.k8s.io", m.SetupNamespaces, "endpointslices")})
	deployments = []m.Read{m.Reads("apps", m.SetupNamespaces, "deployments")}
	// disruptionBudgets: the DNS Deployment's PodDisruptionBudget.
	disruptionBudgets = []m.Read{m.Reads("policy", m.SetupNamespaces, "poddisruptionbudgets")}
	corefile          = []m.Read{m.Reads("", m.SetupNamespaces, "configmaps")}
	// system is kube-system's ConfigMaps and pods: kube-proxy's configuration and static pods,
	// the API server's flags (DenyServiceExternalIPs). LA202 reads cilium-config in the cilium
	// agent's namespace when that is not kube-system (a Helm release namespace): the shipped
	// ClusterRole already grants ConfigMaps there, and when a custom role does not, LA202 WARNs
	// naming the namespace and the grant, so no namespace is added here.
	system     = []m.Read{m.Reads("", m.SystemNamespace, "configmaps", "pods")}
	namespaces = []m.Read{m.Reads("", m.Cluster, "namespaces")}
	// admission is what reserves externalIPs: webhooks, admission policies, Kyverno, Gatekeeper.
	admission = []m.Read{
		m.Reads("admissionregistration.k8s.io", m.Cluster, "validatingwebhookconfigurations"),
		m.CustomReads("admissionregistration.k8s.io", "validatingadmissionpolicies", "validatingadmissionpolicybindings"),
		m.CustomReads("kyverno.io", "clusterpolicies", "policies"),
		m.CustomReads("templates.gatekeeper.sh", "constrainttemplates"),
		m.CustomReads("constraints.gatekeeper.sh", "k8sexternalips"),
	}
	// helperPods are LA201's helper pods, in their namespace (the cleanup command deletes them).
	helperPods = []m.Read{
		{Resources: []string{"pods"}, Verbs: []string{"create", "delete", "get", "list"}, Grant: m.GrantHelpers, Scope: m.HelperNamespace, Optional: true},
		{Resources: []string{"pods/exec"}, Verbs: []string{"create"}, Grant: m.GrantHelpers, Scope: m.HelperNamespace, Optional: true},
	}
	// dataplane is what implements Services: kube-proxy's, Cilium's and Calico's agents,
	// Calico's Installation and its eBPF switch (FelixConfiguration, in the group its version
	// serves).
	dataplane = []m.Read{
		m.Reads("apps", m.Cluster, "daemonsets"), m.CustomReads("operator.tigera.io", "installations"),
		m.CustomReads("projectcalico.org", "felixconfigurations"), m.CustomReads("crd.projectcalico.org", "felixconfigurations"),
	}
	// trustedReaders: LA201 confirms that a node reader's controller is the trusted DaemonSet
	// it names; without the grant it reads through its own helper instead.
	trustedReaders = []m.Read{{Group: "apps", Resources: []string{"daemonsets"}, Verbs: []string{"get"}, Scope: m.Cluster, Optional: true}}
	// vpnPods: the VPN Role also lets vpn-trace find its pods when only the VPN namespace is granted.
	vpnPods = reads(setupPods, []m.Read{{Resources: []string{"pods"}, Grant: m.GrantVPNExec, Scope: m.VPNNamespace}})
	vpnExec = []m.Read{{Resources: []string{"pods/exec"}, Verbs: []string{"create"}, Grant: m.GrantVPNExec, Scope: m.VPNNamespace}}
	// proveFixes is --prove-fixes: a pod carrying each forwarding fix, created with dryRun=All
	// after asking whether this identity may.
	proveFixes = []m.Read{{Resources: []string{"pods"}, Verbs: []string{"create"}, Grant: m.GrantVPNDryRun, Scope: m.VPNNamespace, Optional: true}}
	// nodeReads: vpn-trace reads the VPN pods' nodes through the trusted system DaemonSets' pods:
	// the node, the pods on it, and the DaemonSet a reader pod belongs to (podexec.ReaderTrust).
	nodeReads = []m.Read{
		{Resources: []string{"pods/exec"}, Verbs: []string{"create"}, Grant: m.GrantNodeRead, Scope: m.SystemNamespace, Optional: true},
		m.Reads("", m.Cluster, "nodes", "pods"), m.Reads("apps", m.Cluster, "daemonsets"),
	}
	// owner is a VPN pod's controller (ReplicaSet, then Deployment) and its namespace's labels.
	owner = []m.Read{deployments[0], m.Reads("apps", m.Cluster, "replicasets"), m.Reads("", m.Cluster, "namespaces")}
	// durability is what keeps ip_forward across restarts: the pods' events, the ConfigMaps
	// their spec mounts, the kubelet's configz (allowed sysctls).
	durability = []m.Read{
		m.Reads("", m.Cluster, "events", "configmaps"),
		{Resources: []string{"nodes/proxy"}, Verbs: []string{"get"}, Grant: m.GrantNodeConfigz, Scope: m.Cluster, Optional: true},
	}
	// cni is the cluster's pod network: the DaemonSets mounting the CNI configuration, Calico's
	// Installation, the CNI's ConfigMaps.
	cni = []m.Read{m.Reads("apps", m.Cluster, "daemonsets"), m.CustomReads("operator.tigera.io", "installations"), m.Reads("", m.Cluster, "configmaps")}
	// policies are the NetworkPolicies and the CNIs' own policy kinds (read when their CRDs are
	// installed).
	policies = []m.Read{
		m.Reads("networking.k8s.io", m.Cluster, "networkpolicies"),
		m.CustomReads("crd.projectcalico.org", "networkpolicies", "globalnetworkpolicies"),
		m.CustomReads("projectcalico.org", "networkpolicies", "globalnetworkpolicies"),
		m.CustomReads("cilium.io", "ciliumnetworkpolicies", "ciliumclusterwidenetworkpolicies"),
	}
	// targets are the ladders' addresses and the cluster's ranges: the nodes, the pod and
	// Service ranges vpn-trace's pushed routes must cover (ServiceCIDRs), the cluster DNS
	// Service, a pod to reach and its endpoints and namespace.
	targets = []m.Read{
		m.Reads("", m.Cluster, "nodes", "services", "pods", "namespaces"),
		m.Reads("networking.k8s.io", m.Cluster, "servicecidrs"), m.Reads("discovery.k8s.io", m.Cluster, "endpointslices"),
	}
)

// reads joins groups of declarations into one entry's list.
func reads(groups ...[]m.Read) []m.Read {
	return slices.Concat(groups...)
}

// declared is every entry's declaration, the commands' starts first.
func declared() []m.Declared {
	all := append(slices.Clone(notStarted), entries()...)
	out := make([]m.Declared, 0, len(all))
	for _, e := range all {
		out = append(out, m.Declared{By: e.ID, Reads: e.Reads})
	}
	return out
}

// Permissions derives the permission rows from what every entry declares: the single list that
// LA001 reviews and that the shipped RBAC bundles are tested against (For names entry IDs; the
// commands' starts, LA000, VPN000 and WS000, are their discovery).
func Permissions() []m.Permission { return m.Rows(declared()) }

// Validate refuses an entry's declaration that grants nothing or grants in the wrong place.
func Validate() error {
	for _, d := range declared() {
		for _, r := range d.Reads {
			if err := r.Validate(); err != nil {
				return fmt.Errorf("%s: %w", d.By, err)
			}
		}
	}
	return nil
}

// ReadKeys names the discovery reads the entry declares (kube.ReadKey, the keys of
// Setup.Partial), those of the setup's namespaces in ns: what a check says it did not see
// when one failed.
func (e Entry) ReadKeys(ns string) []string {
	var out []string
	for _, r := range e.Reads {
		if !r.IsRead() {
			continue
		}
		where := map[m.Scope]string{m.SetupNamespaces: ns, m.SystemNamespace: "kube-system"}[r.Scope]
		for _, res := range r.Resources {
			if k := kube.ReadKey(r.Group, res, where); !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// Readers lists the entries of command that declare the discovery read key names (a
// kube.ReadKey, "configmaps in kube-system"), given the setup's namespaces: the checks a read
// that failed leaves unjudged.
func Readers(command, key string, setupNamespaces []string) []string {
	var out []string
	for _, e := range append([]Entry{NotStarted(command)}, ForCommand(command)...) {
		for _, ns := range append([]string{""}, setupNamespaces...) {
			if slices.Contains(e.ReadKeys(ns), key) {
				out = append(out, e.ID)
				break
			}
		}
	}
	return out
}

// readsSection is the catalogue page's table of what each entry reads: the permissions it
// needs, as declared (the RBAC bundles and LA001 are derived from the same declarations).
func readsSection(start Entry, es []Entry) string {
	var b strings.Builder
	b.WriteString("\n## What each check reads\n\nDeclared in the catalogue (`Reads`); the RBAC bundles (`kubectl lanaccess manifests rbac`), ")
	b.WriteString("LA001's access reviews and the checks' \"could not read\" notes are derived from it. ")
	b.WriteString("A resource alone is read (get and list) in all namespaces; resources without a group are core (v1).\n\n| ID | Reads |\n|----|-------|\n")
	for _, e := range append([]Entry{start}, es...) {
		fmt.Fprintf(&b, "| %s | %s |\n", e.ID, readsCell(e))
	}
	return b.String()
}

// readsCell is the catalogue page's summary of an entry's reads, grouped by verbs and place:
// "services, nodes; in the setup's namespaces: pods; create pods/exec in the VPN pods' namespace".
func readsCell(e Entry) string {
	var labels []string
	byLabel := map[string][]string{}
	for _, r := range e.Reads {
		label := strings.Join(r.Verbs, "/")
		if where := scopeWords[r.Scope]; where != "" {
			label = strings.TrimSpace(label + " in " + where)
		}
		if r.Optional {
			label = strings.TrimSpace(label + " (optional)")
		}
		if _, ok := byLabel[label]; !ok {
			labels = append(labels, label)
		}
		for _, res := range r.Resources {
			if r.Group != "" {
				res += "." + r.Group
			}
			if !slices.Contains(byLabel[label], res) {
				byLabel[label] = append(byLabel[label], res)
			}
		}
	}
	if len(labels) == 0 {
		return "nothing from the API"
	}
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		if l == "" {
			parts = append(parts, strings.Join(byLabel[l], ", "))
			continue
		}
		parts = append(parts, l+": "+strings.Join(byLabel[l], ", "))
	}
	return strings.Join(parts, "; ")
}

var scopeWords = map[m.Scope]string{
	m.SetupNamespaces: "the setup's namespaces", m.HelperNamespace: "the helpers' namespace",
	m.VPNNamespace: "the VPN pods' namespace", m.SystemNamespace: "kube-system",
}
