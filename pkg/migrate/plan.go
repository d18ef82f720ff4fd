package migrate

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// Plan is the way from externalIPs to a form: the new objects to apply beside the old ones,
// the chart values when the proxy is a Helm release, and the steps of the cut-over.
type Plan struct {
	Form Form
	// Zone is the zone's FQDN; Source names what the plan was read from.
	Zone   string
	Source string
	// Addresses are the node LAN addresses (the Services' externalIPs), each with its node.
	Addresses []NodeAddress
	// Objects are the new objects, in the order to apply them (none for a Helm-managed proxy's
	// DaemonSet, which its chart renders from Values).
	Objects []runtime.Object
	// Values are the chart values of the proxy's Helm release (nil when it is not one).
	Values *HelmValues
	// Zone answers: whether the Corefile's A answers change, and why.
	ZoneAnswers string
	// Steps are the cut-over, in order.
	Steps []Step
	// Notes are what to know before starting.
	Notes []string
	// ProbeHost is the host a served route of the zone names, as doctor chose it on the live
	// setup ("" when none): the printed doctor steps pass it with --host, because doctor
	// naming both new Services stays in their namespace and does not read the routes of the
	// others to choose one (it would probe the zone apex, which usually no route serves).
	ProbeHost string
}

// doctorCommand is the doctor step on the new Services.
func (p *Plan) doctorCommand(proxyRef, dnsRef string) string {
	args := []string{"kubectl", "lanaccess", "doctor", "--proxy-service", proxyRef, "--dns-service", dnsRef, "--zone", strings.TrimSuffix(p.Zone, ".")}
	if p.ProbeHost != "" {
		args = append(args, "--host", p.ProbeHost)
	}
	return remedy.Command(args...)
}

// NodeAddress is one address and the node whose InternalIP it is.
type NodeAddress struct {
	Addr netip.Addr
	Node string
}

// Step is one stage of the cut-over: what it does (Why, comment lines) and the commands, as
// pasteable shell.
type Step struct {
	Title    string
	Why      []string
	Commands []string
}

// Suffix ends the names of the new objects: the old names with it, so they stand beside the old ones.
const Suffix = "-hostport"

// MigratedLabel marks the new pods: the new selectors add it, so the new Services and
// DaemonSets never select the old pods.
const MigratedLabel = "lanaccess.io/form"

// Error is a setup the plan cannot be built for (bad usage or configuration: exit 2).
type Error struct{ Message string }

func (e *Error) Error() string { return e.Message }

func failf(format string, a ...any) error { return &Error{Message: fmt.Sprintf(format, a...)} }

// nodeAddresses reads the node LAN addresses: the proxy's and the DNS Service's externalIPs,
// which must be the same set (LA101 judges that first), each the InternalIP of exactly one
// node. hostPort serves a node's own addresses only: an address no node carries cannot move.
func nodeAddresses(s *kube.Setup) ([]NodeAddress, error) {
	proxy, err := addrSet(s.ProxyService)
	if err != nil {
		return nil, err
	}
	dns, err := addrSet(s.DNSService)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(proxy, dns) {
		return nil, failf("the proxy's externalIPs (%s) and the DNS's (%s) differ: run `kubectl lanaccess doctor --only LA101` and make them one list first", join(proxy), join(dns))
	}
	out := make([]NodeAddress, 0, len(proxy))
	for _, a := range proxy {
		nodes := kubeobj.NodesWithInternalIP(s.Nodes, a)
		switch len(nodes) {
		case 1:
			out = append(out, NodeAddress{Addr: a, Node: nodes[0].Name})
		case 0:
			return nil, failf("%s is no node's InternalIP: a hostPort is served on a node's own addresses only, so this address cannot move (run `kubectl lanaccess doctor --only LA101`)", a)
		default:
			return nil, failf("%s is the InternalIP of %d nodes: the plan needs one node per address (run `kubectl lanaccess doctor --only LA101`)", a, len(nodes))
		}
	}
	return out, nil
}

// addrSet is a Service's externalIPs, parsed, unmapped and sorted.
func addrSet(svc *corev1.Service) ([]netip.Addr, error) {
	ref := kubeobj.Ref("Service", svc.Namespace, svc.Name)
	if len(svc.Spec.ExternalIPs) == 0 {
		return nil, failf("%s has no externalIPs: there is nothing to migrate from (the plan starts from the externalIPs setup)", ref)
	}
	out := make([]netip.Addr, 0, len(svc.Spec.ExternalIPs))
	for _, raw := range svc.Spec.ExternalIPs {
		a, err := netip.ParseAddr(raw)
		if err != nil {
			return nil, failf("%s: externalIP %q is not an address: run `kubectl lanaccess doctor --only LA101`", ref, raw)
		}
		if a = a.Unmap(); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out, nil
}

func join(addrs []netip.Addr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// nodeNames are the nodes of addrs, sorted, once each.
func nodeNames(addrs []NodeAddress) []string {
	var out []string
	for _, a := range addrs {
		if !slices.Contains(out, a.Node) {
			out = append(out, a.Node)
		}
	}
	sort.Strings(out)
	return out
}

// zoneAnswers says whether the Corefile's A answers change. With hostPort DaemonSets (or
// ServiceLB's) pinned to the nodes that carry the addresses, the zone must answer those nodes'
// addresses: the same list as today, so the Corefile stays as it is; when the answers are not
// that list, LA101 says so and its fix comes first.
func zoneAnswers(s *kube.Setup, addrs []NodeAddress, form Form) (string, error) {
	za := s.ZoneAnswers
	if !za.Known {
		why := za.Why
		if why == "" {
			why = "no template answers A in the zone"
		}
		return "The zone's A answers could not be read from the Corefile (" + why + "): they must be the addresses above, " +
			"as today; doctor's LA101 and LA104 judge them on the new objects.", nil
	}
	var got []netip.Addr
	for _, a := range za.Answers {
		if a.Err == "" && a.Addr.IsValid() && !slices.Contains(got, a.Addr.Unmap()) {
			got = append(got, a.Addr.Unmap())
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Less(got[j]) })
	want := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		want[i] = a.Addr
	}
	if !slices.Equal(got, want) {
		return "", failf("the zone answers %s but the Services' externalIPs are %s: run `kubectl lanaccess doctor --only LA101` and make them one list first", join(got), join(want))
	}
	where := "the DaemonSets run on exactly the nodes"
	switch form {
	case ServiceLB:
		where = "ServiceLB's pods run on exactly the nodes"
	case CiliumNodeIPAM:
		where = "Cilium's node IPAM publishes exactly the nodes"
	}
	return fmt.Sprintf("The Corefile does not change: %s whose addresses the zone answers today (%s), %s.",
		where, join(want), za.Object), nil
}
