package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
)

// rulesFixture answers rules reviews with rules (and incomplete, evalErr), and access reviews
// with allowed, counting both.
func rulesFixture(rules []authorizationv1.ResourceRule, incomplete bool, evalErr string, allowed bool) (*fake.Clientset, map[string]int) {
	cs := fake.NewClientset()
	n := map[string]int{}
	cs.PrependReactor("create", "selfsubjectrulesreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		n["rules"]++
		r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectRulesReview).DeepCopy()
		r.Status = authorizationv1.SubjectRulesReviewStatus{ResourceRules: rules, Incomplete: incomplete, EvaluationError: evalErr}
		return true, r, nil
	})
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		n["access"]++
		r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		r.Status.Allowed = allowed
		return true, r, nil
	})
	return cs, n
}

// The shipped Role's shape: lists in the namespace, exec by */subresource, a named ConfigMap.
var namespaceRules = []authorizationv1.ResourceRule{
	{Verbs: []string{"list", "get"}, APIGroups: []string{""}, Resources: []string{"pods", "services"}},
	{Verbs: []string{"*"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}},
	{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"*/exec"}},
	{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"coredns"}},
}

func TestACompleteRulesReviewAnswersEveryQuestionInItsNamespace(t *testing.T) {
	cs, n := rulesFixture(namespaceRules, false, "", false)
	r := NewAccessReviewer(clientgo.Wrap(cs))
	for q, want := range map[AccessQuestion]bool{
		{Verb: "list", Resource: "pods", Namespace: "traefik"}:                                  true,
		{Verb: "list", Group: "apps", Resource: "deployments", Namespace: "traefik"}:            true,
		{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: "traefik"}:           true,
		{Verb: "create", Resource: "pods", Namespace: "traefik"}:                                false,
		{Verb: "list", Resource: "configmaps", Namespace: "traefik"}:                            false, // only a named one
		{Verb: "list", Group: "policy", Resource: "poddisruptionbudgets", Namespace: "traefik"}: false,
	} {
		a, err := r.Review(t.Context(), q)
		require.NoError(t, err)
		assert.Equal(t, want, a.Allowed, "%+v: %s", q, a.Reason)
	}
	assert.Equal(t, map[string]int{"rules": 1}, n, "one rules review for the namespace, no access review")
}

// An incomplete review (a webhook authorizer), or one with an evaluation error (a binding
// whose role is missing), does not answer: access reviews do. A question about all namespaces
// is always an access review.
func TestARulesReviewThatIsNotCompleteLeavesTheAnswerToAccessReviews(t *testing.T) {
	for name, c := range map[string]struct {
		incomplete bool
		evalErr    string
	}{"incomplete": {incomplete: true}, "evaluation error": {evalErr: `role.rbac.authorization.k8s.io "gone" not found`}} {
		t.Run(name, func(t *testing.T) {
			cs, n := rulesFixture(nil, c.incomplete, c.evalErr, true)
			r := NewAccessReviewer(clientgo.Wrap(cs))
			a, err := r.Review(t.Context(), AccessQuestion{Verb: "list", Resource: "pods", Namespace: "traefik"})
			require.NoError(t, err)
			assert.True(t, a.Allowed)
			assert.Equal(t, map[string]int{"rules": 1, "access": 1}, n)
		})
	}
	cs, n := rulesFixture(namespaceRules, false, "", false)
	r := NewAccessReviewer(clientgo.Wrap(cs))
	a, err := r.Review(t.Context(), AccessQuestion{Verb: "list", Resource: "pods"})
	require.NoError(t, err)
	assert.False(t, a.Allowed, "the access review's answer, not the namespace's rules")
	assert.Equal(t, map[string]int{"access": 1}, n)
	self, err := r.Review(t.Context(), selfReview)
	require.NoError(t, err)
	assert.True(t, self.Allowed, "an answered access review proves creating one is permitted")
	assert.Equal(t, map[string]int{"access": 1}, n)
}

// A list this run's requests already made is not asked about.
func TestAListThisRunMadeIsNotAskedAbout(t *testing.T) {
	cs, n := rulesFixture(nil, true, "", false)
	listed := AccessQuestion{Verb: "list", Resource: "services"}
	r := NewAccessReviewer(clientgo.Wrap(cs)).Knowing(func(q AccessQuestion) bool { return q == listed })
	a, err := r.Review(t.Context(), listed)
	require.NoError(t, err)
	assert.True(t, a.Allowed)
	assert.Empty(t, n)
	a, err = r.Review(t.Context(), AccessQuestion{Verb: "list", Resource: "nodes"})
	require.NoError(t, err)
	assert.False(t, a.Allowed, "a list not made is asked")
	assert.Equal(t, map[string]int{"access": 1}, n)
}
