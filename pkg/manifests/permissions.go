package manifests

import (
	"fmt"
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
	// GrantVPNDryRun is the opt-in Role in the VPN pods' namespace that lets --prove-fixes
	// create pods with dryRun=All (RBAC cannot restrict it to dry-runs).
	GrantVPNDryRun Grant = "rbac-vpn-dryrun"
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
	case GrantVPNDryRun:
		return "kubectl-lanaccess-vpn-dryrun"
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
	return []Grant{GrantDoctor, GrantHelpers, GrantVPNExec, GrantVPNDryRun, GrantNodeConfigz, GrantNodeRead}
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
// it. Rows derives them from the catalogue's declarations (Read).
type Permission struct {
	Group    string
	Resource string
	Verb     string
	Grant    Grant
	Scope    Scope
	// For lists the catalogue entries that declare it (LA000, VPN000, WS000: the command's start).
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

// Read is one kind of API call a catalogue entry declares it makes (checks/catalogue holds the
// declarations, one list per entry): the rows of every bundle (Rows), LA001's access reviews and
// the checks a read that failed leaves unjudged are derived from these declarations, and a test
// fails when a check reads something its entry does not declare.
type Read struct {
	Group string
	// Resources of Group, each possibly with a subresource ("pods/exec": exec into pods).
	Resources []string
	// Verbs: nil is a read, granted get and list (what RBAC users expect of a read-only role).
	Verbs []string
	// Grant: "" is GrantDoctor, the read-only ClusterRole.
	Grant Grant
	Scope Scope
	// Optional: the check works without it (information when missing, not a warning).
	Optional bool
	// CRD: a custom resource, asked about only when its CRD is installed.
	CRD bool
}

// Reads declares get and list of resources of group, in scope, under the read-only grant.
func Reads(group string, scope Scope, resources ...string) Read {
	return Read{Group: group, Resources: resources, Scope: scope}
}

// CustomReads declares get and list of custom resources of group, cluster-wide.
func CustomReads(group string, resources ...string) Read {
	return Read{Group: group, Resources: resources, Scope: Cluster, CRD: true}
}

// WithoutIt marks r optional: the check works without it.
func (r Read) WithoutIt() Read {
	r.Optional = true
	return r
}

// verbs are r's verbs (get and list for a read).
func (r Read) verbs() []string {
	if len(r.Verbs) == 0 {
		return []string{"get", "list"}
	}
	return r.Verbs
}

// grant is r's grant (the read-only one unless named).
func (r Read) grant() Grant {
	if r.Grant == "" {
		return GrantDoctor
	}
	return r.Grant
}

// IsRead tells whether r is a plain read of the read-only grant: one that discovery makes and
// records in Setup.Partial when it fails.
func (r Read) IsRead() bool {
	return r.grant() == GrantDoctor && len(r.Verbs) == 0
}

// Validate refuses a declaration that grants nothing or grants in the wrong place: exec and
// writes only under an opt-in grant, the read-only grant reads (and asks access reviews) only.
func (r Read) Validate() error {
	if len(r.Resources) == 0 {
		return fmt.Errorf("a read of group %q names no resource", r.Group)
	}
	for _, res := range r.Resources {
		if res == "" || strings.ToLower(res) != res || strings.Count(res, "/") > 1 {
			return fmt.Errorf("resource %q is not a lower-case RBAC resource", res)
		}
		if r.grant() == GrantDoctor && strings.Contains(res, "/") {
			return fmt.Errorf("%s: the read-only grant holds no subresource (exec, proxy)", res)
		}
	}
	if !slices.Contains(Grants(), r.grant()) {
		return fmt.Errorf("%v: unknown grant %q", r.Resources, r.Grant)
	}
	for _, v := range r.verbs() {
		if !slices.Contains([]string{"get", "list", "create", "delete"}, v) {
			return fmt.Errorf("%v: verb %q is not one the plugin uses", r.Resources, v)
		}
		write := v == "create" || v == "delete"
		if write && r.grant() == GrantDoctor && !slices.Equal(r.Resources, []string{"selfsubjectaccessreviews"}) {
			return fmt.Errorf("%v: the read-only grant does not %s", r.Resources, v)
		}
	}
	return nil
}

// Declared is the reads one catalogue entry (a check, or a command's start) declares.
type Declared struct {
	By    string
	Reads []Read
}

// Rows derives the permission rows (one per group, resource, verb, grant and scope, with every
// entry that needs it) from the declarations, in the order they are first declared: the single
// list that LA001 reviews and that the shipped RBAC is tested against.
func Rows(decls []Declared) []Permission {
	type key struct {
		group, resource, verb string
		grant                 Grant
		scope                 Scope
		optional, crd         bool
	}
	index := map[key]int{}
	var out []Permission
	for _, d := range decls {
		for _, r := range d.Reads {
			for _, res := range r.Resources {
				for _, v := range r.verbs() {
					k := key{r.Group, res, v, r.grant(), r.Scope, r.Optional, r.CRD}
					i, seen := index[k]
					if !seen {
						i = len(out)
						index[k] = i
						out = append(out, Permission{Group: r.Group, Resource: res, Verb: v, Grant: k.grant, Scope: r.Scope, Optional: r.Optional, CRD: r.CRD})
					}
					if !slices.Contains(out[i].For, d.By) {
						out[i].For = append(out[i].For, d.By)
					}
				}
			}
		}
	}
	return out
}
