package checks_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"mvdan.cc/sh/v3/syntax"

	"github.com/lanaccess/kubectl-lanaccess/checks"
	"github.com/lanaccess/kubectl-lanaccess/checks/config"
	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
)

// injected is what a tenant appends to every free-text field: a newline, then a command.
const injected = "\ntouch /tmp/lanaccess-pwned\n"

// hostile appends the injection to the fields the API server stores as written (annotations,
// images, commands and arguments, route middleware references): a tenant who may create
// Services, routes or Deployments writes them.
func hostile(obj map[string]any, parent string) {
	for k, v := range obj {
		switch x := v.(type) {
		case map[string]any:
			if k == "annotations" {
				injectAll(x)
				continue
			}
			hostile(x, k)
		case []any:
			hostileList(x, k)
		case string:
			if k == "image" || (k == "name" && parent == "middlewares") {
				obj[k] = x + injected
			}
		}
	}
}

func injectAll(m map[string]any) {
	for k, v := range m {
		if s, ok := v.(string); ok {
			m[k] = s + injected
		}
	}
}

func hostileList(list []any, key string) {
	for i, e := range list {
		switch y := e.(type) {
		case map[string]any:
			hostile(y, key)
		case string:
			if key == "args" || key == "command" {
				list[i] = y + injected
			}
		}
	}
}

// Every fix doctor prints, on every corpus case with hostile text in every free-text field,
// parses as a shell script in which the injected command never runs: each value read from the
// cluster stays inside a word or a comment (issue 23's property test).
func TestNoFixRunsTextFromTheCluster(t *testing.T) {
	fixes := 0
	for _, name := range corpusCases(t) {
		t.Run(name, func(t *testing.T) {
			objs, err := fixture.Load(filepath.Join(corpusDir, name, "objects.yaml"))
			require.NoError(t, err)
			for _, o := range objs {
				if u, ok := o.(*unstructured.Unstructured); ok {
					hostile(u.Object, "")
					continue
				}
				u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
				require.NoError(t, err)
				hostile(u, "")
				require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u, o))
			}
			cs, dc, err := fixture.Clients(objs)
			require.NoError(t, err)
			fixture.ReactAccess(cs, func(authorizationv1.ResourceAttributes) bool { return true })
			setup, err := kube.Discover(t.Context(), clientgo.Wrap(cs), dc, kube.Selection{AllNamespaces: true})
			if err != nil {
				return // discovery refused the setup: no fix is printed
			}
			env := checks.DoctorEnv{Config: &config.Env{Setup: setup, Access: kube.NewAccessReviewer(clientgo.Wrap(cs)), HelperNamespace: "default", NoHelpers: true}}
			for _, res := range (&engine.Runner{Checks: checks.Doctor(env)}).Run(t.Context()) {
				for _, f := range res.Findings {
					if f.Remediation == "" {
						continue
					}
					fixes++
					assertNoInjectedCommand(t, res.ID+" "+f.Code, f.Remediation)
				}
			}
		})
	}
	t.Logf("%d fixes read", fixes)
	require.Positive(t, fixes)
}

func assertNoInjectedCommand(t *testing.T, what, fix string) {
	t.Helper()
	file, err := syntax.NewParser().Parse(strings.NewReader(fix), "fix")
	if !assert.NoError(t, err, "%s: the fix does not parse:\n%s", what, fix) {
		return
	}
	syntax.Walk(file, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			if lit := call.Args[0].Lit(); lit == "touch" {
				assert.Fail(t, "text from the cluster runs as a command", "%s:\n%s", what, fix)
			}
		}
		return true
	})
}
