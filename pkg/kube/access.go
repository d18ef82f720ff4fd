package kube

import (
	"context"
	"errors"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Access is the answer of one SelfSubjectAccessReview.
type Access struct {
	Allowed bool
	Reason  string
}

// AccessQuestion is one verb on one resource ("pods", subresource "exec"; group "" for the core
// group; namespace "" for all namespaces or a cluster-scoped resource).
type AccessQuestion struct {
	Verb, Group, Resource, Subresource, Namespace string
}

// AccessReviewer asks the API server SelfSubjectAccessReviews, each question once per run.
type AccessReviewer struct {
	client kubernetes.Interface
	mu     sync.Mutex
	cache  map[AccessQuestion]Access
}

// NewAccessReviewer returns a reviewer; a nil client answers every question with an error.
func NewAccessReviewer(client kubernetes.Interface) *AccessReviewer {
	return &AccessReviewer{client: client, cache: map[AccessQuestion]Access{}}
}

// Review answers q.
func (r *AccessReviewer) Review(ctx context.Context, q AccessQuestion) (Access, error) {
	if r == nil || r.client == nil {
		return Access{}, errors.New("no Kubernetes client")
	}
	r.mu.Lock()
	a, ok := r.cache[q]
	r.mu.Unlock()
	if ok {
		return a, nil
	}
	res, err := r.client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: q.Verb, Group: q.Group, Resource: q.Resource, Subresource: q.Subresource, Namespace: q.Namespace,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return Access{}, err
	}
	a = Access{Allowed: res.Status.Allowed && !res.Status.Denied, Reason: res.Status.Reason}
	r.mu.Lock()
	r.cache[q] = a
	r.mu.Unlock()
	return a, nil
}
