package kube

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// builtGroups are the methods of kubernetes.Interface that Clientset builds.
var builtGroups = map[string]bool{
	"Discovery": true, "AdmissionregistrationV1": true, "AppsV1": true, "AuthorizationV1": true,
	"CoreV1": true, "DiscoveryV1": true, "NetworkingV1": true, "PolicyV1": true,
}

// Every built group asks its own API path, through the one HTTP client and with cfg's user agent.
func TestClientsetGroups(t *testing.T) {
	var (
		mu    sync.Mutex
		paths []string
		agent string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		agent = r.UserAgent()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/version" {
			_, _ = w.Write([]byte(`{"gitVersion":"v1.37.2"}`))
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	cs, err := NewClientset(&rest.Config{Host: srv.URL, UserAgent: "lanaccess-test", QPS: 50, Burst: 100})
	require.NoError(t, err)
	ctx, opts := context.Background(), metav1.ListOptions{}
	v, err := cs.Discovery().ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, "v1.37.2", v.GitVersion)
	for _, list := range []func() error{
		func() error {
			_, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, opts)
			return err
		},
		func() error { _, err := cs.AppsV1().Deployments("ns").List(ctx, opts); return err },
		func() error {
			_, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{}, metav1.CreateOptions{})
			return err
		},
		func() error { _, err := cs.CoreV1().Pods("ns").List(ctx, opts); return err },
		func() error { _, err := cs.DiscoveryV1().EndpointSlices("ns").List(ctx, opts); return err },
		func() error { _, err := cs.NetworkingV1().Ingresses("ns").List(ctx, opts); return err },
		func() error { _, err := cs.PolicyV1().PodDisruptionBudgets("ns").List(ctx, opts); return err },
	} {
		require.NoError(t, list())
	}
	assert.Equal(t, []string{
		"GET /version",
		"GET /apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
		"GET /apis/apps/v1/namespaces/ns/deployments",
		"POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
		"GET /api/v1/namespaces/ns/pods",
		"GET /apis/discovery.k8s.io/v1/namespaces/ns/endpointslices",
		"GET /apis/networking.k8s.io/v1/namespaces/ns/ingresses",
		"GET /apis/policy/v1/namespaces/ns/poddisruptionbudgets",
	}, paths)
	assert.Equal(t, "lanaccess-test", agent)
}

// A group Clientset does not build panics naming itself, never as a nil dereference.
func TestClientsetUnsupportedGroupsPanic(t *testing.T) {
	var cs kubernetes.Interface = &Clientset{}
	v := reflect.ValueOf(cs)
	all, unsupported := interfaceGroups(), 0
	for name := range all {
		if builtGroups[name] {
			continue
		}
		unsupported++
		func() {
			defer func() {
				r := recover()
				require.NotNil(t, r, name)
				assert.Equal(t, "kube.Clientset: the API group of "+name+"() is not built; add it to pkg/kube/clientset.go", r, name)
			}()
			v.MethodByName(name).Call(nil)
		}()
	}
	assert.Equal(t, len(all)-len(builtGroups), unsupported)
}

// The plugin's code (cmd, pkg, checks, internal; not the lab's programs, which build the whole
// clientset) calls no group of kubernetes.Interface that Clientset does not build: a new call
// of another group fails here, not in a user's run.
func TestClientsetGroupsCalled(t *testing.T) {
	groups := interfaceGroups()
	root := filepath.Join("..", "..")
	seen := map[string]bool{}
	for _, dir := range []string{"cmd", "pkg", "checks", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 0 {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && groups[sel.Sel.Name] {
					seen[sel.Sel.Name] = true
					assert.True(t, builtGroups[sel.Sel.Name], "%s calls %s(), a group kube.Clientset does not build", path, sel.Sel.Name)
				}
				return true
			})
			return nil
		})
		require.NoError(t, err)
	}
	// the scan sees the calls it guards (it would pass on an empty tree otherwise)
	assert.True(t, seen["CoreV1"] && seen["AppsV1"] && seen["AuthorizationV1"], "groups seen: %v", seen)
}

// interfaceGroups are the method names of kubernetes.Interface.
func interfaceGroups() map[string]bool {
	groups := map[string]bool{}
	for m := range reflect.TypeFor[kubernetes.Interface]().Methods() {
		groups[m.Name] = true
	}
	return groups
}
