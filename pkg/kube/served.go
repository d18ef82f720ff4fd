package kube

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
)

// ServedOnly wraps dyn so that reading a custom resource of an API group/version the API
// server does not serve is answered "not found" without a request, as the server itself would
// answer it (404: IsNotInstalled). Which group/versions are served is asked once, on the first
// read, with groups (APIGroups); when that fails, every read goes to the server as before.
// Discovery tries several groups and versions a cluster may or may not serve (Traefik's two
// groups, Gateway API's v1 and v1beta1, Kyverno, Gatekeeper, Contour, Calico, Cilium): on a
// cluster that serves none, one question replaces a dozen 404s.
func ServedOnly(groups func() (*metav1.APIGroupList, error), dyn dynamic.Interface) dynamic.Interface {
	if groups == nil || dyn == nil {
		return dyn
	}
	return &servedOnly{Interface: dyn, groups: groups}
}

// APIGroups asks the API server which groups and versions it serves: one GET /apis as JSON
// (client.DiscoveryInterface's ServerGroups; the core group, /api, is always served), without
// the aggregated discovery document client-go's discovery would fetch and decode with every
// resource of every group.
func APIGroups(disc client.DiscoveryInterface) func() (*metav1.APIGroupList, error) {
	if disc == nil {
		return nil
	}
	return disc.ServerGroups
}

type servedOnly struct {
	dynamic.Interface
	groups func() (*metav1.APIGroupList, error)
	once   sync.Once
	served map[string]bool // "group/version"; nil: unknown
}

// servedKnown reports whether dyn (a ServedOnly) knows that gv is not served.
func servedKnown(dyn dynamic.Interface, gv schema.GroupVersion) (served, known bool) {
	s, ok := dyn.(*servedOnly)
	if !ok {
		return false, false
	}
	served = s.isServed(gv)
	return served, s.served != nil
}

// isServed reports whether gv is served; true when that is not known.
func (s *servedOnly) isServed(gv schema.GroupVersion) bool {
	s.once.Do(func() {
		groups, err := s.groups()
		if err != nil || groups == nil {
			return
		}
		s.served = map[string]bool{"v1": true} // the core group (/api) is always served
		for _, g := range groups.Groups {
			for _, v := range g.Versions {
				s.served[v.GroupVersion] = true
			}
		}
	})
	return s.served == nil || s.served[gv.String()]
}

func (s *servedOnly) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return &servedResource{NamespaceableResourceInterface: s.Interface.Resource(gvr), s: s, gvr: gvr}
}

// servedResource asks the server only when the resource's group/version is served.
type servedResource struct {
	dynamic.NamespaceableResourceInterface
	s   *servedOnly
	gvr schema.GroupVersionResource
}

func (r *servedResource) notServed() error {
	if r.s.isServed(r.gvr.GroupVersion()) {
		return nil
	}
	return apierrors.NewNotFound(r.gvr.GroupResource(), "")
}

func (r *servedResource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	if err := r.notServed(); err != nil {
		return nil, err
	}
	return r.NamespaceableResourceInterface.List(ctx, opts)
}

func (r *servedResource) Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	if err := r.notServed(); err != nil {
		return nil, err
	}
	return r.NamespaceableResourceInterface.Get(ctx, name, opts, sub...)
}

func (r *servedResource) Namespace(ns string) dynamic.ResourceInterface {
	return &servedNamespaced{ResourceInterface: r.NamespaceableResourceInterface.Namespace(ns), r: r}
}

type servedNamespaced struct {
	dynamic.ResourceInterface
	r *servedResource
}

func (n *servedNamespaced) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	if err := n.r.notServed(); err != nil {
		return nil, err
	}
	return n.ResourceInterface.List(ctx, opts)
}

func (n *servedNamespaced) Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	if err := n.r.notServed(); err != nil {
		return nil, err
	}
	return n.ResourceInterface.Get(ctx, name, opts, sub...)
}
