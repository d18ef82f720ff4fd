package facts

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// cniPolicyKinds are the CNIs' own policies, which drop packets as NetworkPolicies do: Calico's
// (stored as crd.projectcalico.org/v1, or projectcalico.org/v3 where Calico serves its API or
// installs v3 CRDs) and Cilium's.
var cniPolicyKinds = []struct {
	name string
	gvr  schema.GroupVersionResource
}{
	{"Calico NetworkPolicy (crd.projectcalico.org/v1)", schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: "networkpolicies"}},
	{"Calico GlobalNetworkPolicy (crd.projectcalico.org/v1)", schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: "globalnetworkpolicies"}},
	{"Calico NetworkPolicy (projectcalico.org/v3)", schema.GroupVersionResource{Group: "projectcalico.org", Version: "v3", Resource: "networkpolicies"}},
	{"Calico GlobalNetworkPolicy (projectcalico.org/v3)", schema.GroupVersionResource{Group: "projectcalico.org", Version: "v3", Resource: "globalnetworkpolicies"}},
	{"CiliumNetworkPolicy (cilium.io/v2)", schema.GroupVersionResource{Group: "cilium.io", Version: "v2", Resource: "ciliumnetworkpolicies"}},
	{"CiliumClusterwideNetworkPolicy (cilium.io/v2)", schema.GroupVersionResource{Group: "cilium.io", Version: "v2", Resource: "ciliumclusterwidenetworkpolicies"}},
}

// CNIPolicyResources are the resources of the CNIs' own policy kinds vpn-trace lists (the
// catalogue's tests hold VPN005's declared reads to them).
func CNIPolicyResources() []schema.GroupVersionResource {
	out := make([]schema.GroupVersionResource, 0, len(cniPolicyKinds))
	for _, k := range cniPolicyKinds {
		out = append(out, k.gvr)
	}
	return out
}

// listCNIPolicies lists each kind; a kind the API does not serve is not installed, one that
// fails otherwise is not read (and said so).
func (g *Gatherer) listCNIPolicies(ctx context.Context) []PolicyKind {
	out := make([]PolicyKind, 0, len(cniPolicyKinds))
	for _, k := range cniPolicyKinds {
		pk := PolicyKind{Kind: k.name}
		if g.seams.Dynamic == nil {
			pk.Installed, pk.Err = true, fmt.Errorf("no dynamic client: custom resources are not read")
			out = append(out, pk)
			continue
		}
		l, err := g.seams.Dynamic.Resource(k.gvr).List(ctx, metav1.ListOptions{Limit: 500})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			pk.Installed, pk.Err = true, err
		default:
			pk.Installed, pk.Items = true, l.Items
		}
		out = append(out, pk)
	}
	return out
}
