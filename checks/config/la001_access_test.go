package config

import (
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

func denyResource(resources ...string) func(authorizationv1.ResourceAttributes) bool {
	return func(a authorizationv1.ResourceAttributes) bool {
		for _, r := range resources {
			if a.Resource == r || a.Resource+"/"+a.Subresource == r {
				return false
			}
		}
		return true
	}
}

func reviewCount(env *Env) int {
	n := 0
	for _, a := range fakeClient(env).Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "selfsubjectaccessreviews" {
			n++
		}
	}
	return n
}

func TestAccessAndPermissionsPassesWhenEverythingIsGranted(t *testing.T) {
	env := configEnv(t, nil, nil)
	st, o := runConfigCheck(t, AccessAndPermissions(env))
	assert.Equal(t, engine.StatusPass, st)
	assert.Empty(t, o.Findings)
	asked := reviewCount(env)
	assert.Equal(t, len(neededPermissions(env))-1, asked, "one review per needed permission (creating a review is proven by the others)")

	_, err := env.Access.Review(t.Context(), kube.AccessQuestion{Verb: "list", Resource: "nodes"})
	require.NoError(t, err)
	assert.Equal(t, asked, reviewCount(env), "answers are cached per run")
}

func TestAccessAndPermissionsAsksForWhatTheShippedRBACGrants(t *testing.T) {
	env := configEnv(t, nil, nil)
	granted := map[string]bool{}
	for _, p := range catalogue.Permissions() {
		granted[p.Verb+" "+p.Group+"/"+p.Resource] = true
	}
	for _, n := range neededPermissions(env) {
		r := n.Resource
		if n.Subresource != "" {
			r += "/" + n.Subresource
		}
		assert.True(t, granted[n.Verb+" "+n.Group+"/"+r], "LA001 asks for %s, which no shipped grant gives", n)
	}
}

func TestAccessAndPermissionsDoesNotAskForHelperPodsWithNoHelpers(t *testing.T) {
	env := configEnv(t, nil, nil)
	env.NoHelpers = true
	for _, n := range neededPermissions(env) {
		assert.NotEqual(t, "default", n.Namespace, "no helper pod is created with --no-helpers: %s", n)
	}
}

func TestAccessAndPermissionsNamesTheMissingVerbAndTheChecksItSkips(t *testing.T) {
	env := configEnv(t, denyResource("ingressroutes", "pods/exec"), nil)
	st, o := runConfigCheck(t, AccessAndPermissions(env))
	assert.Equal(t, engine.StatusWarn, st)

	warn := configFindings(o, engine.SeverityWarn, "RBAC: list ingressroutes.traefik.io in all namespaces")
	require.Len(t, warn, 1)
	assert.Contains(t, warn[0].Message, "LA107 will be skipped")
	assert.Contains(t, warn[0].Remediation, "kubectl create clusterrole lanaccess-list-ingressroutes-traefik-io --verb=list --resource=ingressroutes.traefik.io")

	assert.Equal(t, "LA001-PERMISSION", warn[0].Code)

	info := configFindings(o, engine.SeverityInfo, "RBAC: create pods/exec in namespace default")
	require.Len(t, info, 1, "exec only serves LA201, which works with less")
	assert.Equal(t, "LA001-PERMISSION-OPTIONAL", info[0].Code)
}

func TestAccessAndPermissionsAsksPerNamespaceAndOnceForSharedNamespaces(t *testing.T) {
	env := configEnv(t, func(a authorizationv1.ResourceAttributes) bool {
		return a.Resource != "configmaps" || a.Namespace != "lan-dns"
	}, nil)
	_, o := runConfigCheck(t, AccessAndPermissions(env))
	f := configFindings(o, engine.SeverityWarn, "RBAC: list configmaps in namespace lan-dns")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Remediation, "kubectl -n lan-dns create role")

	seen := map[kube.AccessQuestion]bool{}
	for _, n := range neededPermissions(env) {
		assert.False(t, seen[n.AccessQuestion], "asked twice: %s", n)
		seen[n.AccessQuestion] = true
	}
}

func TestAccessAndPermissionsDoesNotAskAboutCRDsThatAreNotInstalled(t *testing.T) {
	env := configEnv(t, nil, nil)
	for _, n := range neededPermissions(env) {
		assert.NotEqual(t, "kyverno.io", n.Group, "Kyverno is not installed in the healthy fixtures")
	}
	var traefik bool
	for _, n := range neededPermissions(env) {
		traefik = traefik || n.Group == "traefik.io"
	}
	assert.True(t, traefik)
}

func TestAccessAndPermissionsIsAnErrorWhenTheAPIDoesNotAnswer(t *testing.T) {
	env := configEnv(t, nil, nil)
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	fakeClient(env).PrependReactor("create", "selfsubjectaccessreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, refused
	})
	st, o := runConfigCheck(t, AccessAndPermissions(env))
	assert.Equal(t, engine.StatusError, st)
	assert.ErrorIs(t, o.Err, refused)
}

func TestAccessAndPermissionsWarnsWhenReviewsAreForbidden(t *testing.T) {
	env := configEnv(t, nil, nil)
	fakeClient(env).PrependReactor("create", "selfsubjectaccessreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}, "", errors.New("denied"))
	})
	st, o := runConfigCheck(t, AccessAndPermissions(env))
	assert.Equal(t, engine.StatusWarn, st)
	require.Len(t, configFindings(o, engine.SeverityWarn, "selfsubjectaccessreviews.authorization.k8s.io"), 1)
}

func TestAccessAndPermissionsReportsReadsThatFailedForAnotherReason(t *testing.T) {
	env := configEnv(t, nil, nil)
	env.Setup.Partial["middlewares.traefik.io"] = apierrors.NewServiceUnavailable("conversion webhook down")
	st, o := runConfigCheck(t, AccessAndPermissions(env))
	assert.Equal(t, engine.StatusWarn, st)
	f := configFindings(o, engine.SeverityWarn, "middlewares.traefik.io")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Evidence["error"], "conversion webhook down")
}

// With -n, LA001 asks only about what discovery reads (Services in the namespace, not
// cluster-wide; no nodes, no kube-system) and names the reads it skipped and the checks they
// serve, with the command that reads the whole cluster for the same Services.
func TestAccessAndPermissionsWithANamespaceNamesTheSkippedReads(t *testing.T) {
	env := configEnvWith(t, kube.Selection{Namespace: "traefik", DNSService: "lan-dns/lan-dns"}, nil, nil)
	for _, n := range neededPermissions(env) {
		if n.Resource != "selfsubjectaccessreviews" {
			assert.NotEmpty(t, n.Namespace, "no cluster-wide question: %s", n)
		}
		assert.NotEqual(t, "kube-system", n.Namespace, "kube-system is not read: %s", n)
	}
	st, o := runConfigCheck(t, AccessAndPermissions(env))
	assert.Equal(t, engine.StatusPass, st)
	require.Len(t, o.Findings, 1)
	f := o.Findings[0]
	assert.Equal(t, "LA001-SCOPE", f.Code)
	assert.Equal(t, engine.SeverityInfo, f.Severity)
	assert.Contains(t, f.Message, "namespaces lan-dns, traefik")
	assert.Contains(t, f.Evidence["skipped"], "nodes")
	assert.Contains(t, f.Evidence["skipped"], "services")
	// LA102 and LA103 read the nodes for externalTrafficPolicy Local, LA104 for the sources
	// of an acl or view: the catalogue declares it, so they are named too
	for _, id := range []string{"LA101", "LA102", "LA103", "LA104", "LA106", "LA107", "LA202"} {
		assert.Contains(t, f.Evidence["unjudged"], id)
	}
	assert.NotContains(t, f.Evidence["unjudged"], "LA105", "read in the setup's namespaces, not skipped")
	assert.Equal(t, "kubectl lanaccess doctor -A --proxy-service traefik/traefik --dns-service lan-dns/lan-dns   # needs the cluster-wide read grants (kubectl lanaccess manifests rbac)", f.Remediation)
}
