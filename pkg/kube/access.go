package kube

import (
	"context"
	"errors"
	"slices"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
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

// AccessReviewer answers permission questions, each once per run: a question in a namespace
// from one SelfSubjectRulesReview of that namespace when the API server says its rules are
// complete, any other with a SelfSubjectAccessReview.
//
// When a rules review is authoritative (kubernetes v1.37.2): the SelfSubjectRulesReview REST
// handler (pkg/registry/authorization/selfsubjectrulesreview/rest.go) returns the union of
// the authorizers' RulesFor with Incomplete set when any of them cannot enumerate (the union,
// staging/src/k8s.io/apiserver/pkg/authorization/union/union.go): the webhook authorizer
// always (plugin/pkg/authorizer/webhook/webhook.go), the Node authorizer for a node's own
// identity; RBAC's rules are complete, and a binding whose role cannot be resolved sets
// EvaluationError. RBAC only allows, so with neither flag set a question no rule matches is
// denied, and one a rule matches (rbac.RuleAllows: verb, group, resource or */subresource,
// no resourceNames) is allowed. A rules review needs a namespace and mixes the cluster-wide
// rules with the namespace's own, so a question about all namespaces or a cluster-scoped
// resource is asked as an access review.
type AccessReviewer struct {
	client client.Interface
	mu     sync.Mutex
	cache  map[AccessQuestion]Access
	rules  map[string]*rulesReview
	// asked: an access review was answered, so creating one is permitted.
	asked bool
	// proven tells a question this run's requests already answered (a ReadLog's Listed).
	proven func(AccessQuestion) bool
}

// Knowing makes r answer "allowed" without asking when proven(q) says a request of this run
// was permitted to do exactly q (ReadLog.Listed).
func (r *AccessReviewer) Knowing(proven func(AccessQuestion) bool) *AccessReviewer {
	r.proven = proven
	return r
}

// rulesReview is one namespace's SelfSubjectRulesReview; complete: it can answer alone.
type rulesReview struct {
	once     sync.Once
	rules    []authorizationv1.ResourceRule
	complete bool
}

// NewAccessReviewer returns a reviewer; a nil client answers every question with an error.
func NewAccessReviewer(client client.Interface) *AccessReviewer {
	return &AccessReviewer{client: client, cache: map[AccessQuestion]Access{}, rules: map[string]*rulesReview{}}
}

// selfReview is the question whose answer an answered access review proves.
var selfReview = AccessQuestion{Verb: "create", Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}

// Review answers q.
func (r *AccessReviewer) Review(ctx context.Context, q AccessQuestion) (Access, error) {
	if r == nil || r.client == nil {
		return Access{}, errors.New("no Kubernetes client")
	}
	r.mu.Lock()
	a, ok := r.cache[q]
	switch {
	case ok:
	case q == selfReview && r.asked:
		a, ok = Access{Allowed: true, Reason: "an access review of this run was answered"}, true
	case r.proven != nil && r.proven(q):
		a, ok = Access{Allowed: true, Reason: "this run's request to do it was answered"}, true
	}
	r.mu.Unlock()
	if ok {
		return a, nil
	}
	if a, ok := r.fromRules(ctx, q); ok {
		r.mu.Lock()
		r.cache[q] = a
		r.mu.Unlock()
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
	r.asked = true
	r.mu.Unlock()
	return a, nil
}

// fromRules answers a question in a namespace from that namespace's rules review, when it is
// complete; ok is false when an access review must answer.
func (r *AccessReviewer) fromRules(ctx context.Context, q AccessQuestion) (Access, bool) {
	if q.Namespace == "" {
		return Access{}, false
	}
	r.mu.Lock()
	rr, ok := r.rules[q.Namespace]
	if !ok {
		rr = &rulesReview{}
		r.rules[q.Namespace] = rr
	}
	r.mu.Unlock()
	rr.once.Do(func() {
		res, err := r.client.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: q.Namespace},
		}, metav1.CreateOptions{})
		if err != nil || res == nil {
			return // forbidden, or failing: access reviews answer
		}
		rr.rules = res.Status.ResourceRules
		rr.complete = !res.Status.Incomplete && res.Status.EvaluationError == ""
	})
	if !rr.complete {
		return Access{}, false
	}
	if slices.ContainsFunc(rr.rules, func(rule authorizationv1.ResourceRule) bool { return ruleAllows(rule, q) }) {
		return Access{Allowed: true, Reason: "the namespace's rules review lists it"}, true
	}
	return Access{Reason: "no rule of the namespace's complete rules review allows it"}, true
}

// ruleAllows is rbac.RuleAllows (plugin/pkg/auth/authorizer/rbac/rbac.go) for a question
// without an object name: a rule limited to resourceNames does not allow it.
func ruleAllows(rule authorizationv1.ResourceRule, q AccessQuestion) bool {
	resource := q.Resource
	if q.Subresource != "" {
		resource += "/" + q.Subresource
	}
	return anyOf(rule.Verbs, q.Verb) && anyOf(rule.APIGroups, q.Group) && len(rule.ResourceNames) == 0 &&
		slices.ContainsFunc(rule.Resources, func(r string) bool {
			return r == "*" || r == resource || q.Subresource != "" && r == "*/"+q.Subresource
		})
}

// anyOf: the list holds want or the wildcard "*".
func anyOf(list []string, want string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, want)
}
