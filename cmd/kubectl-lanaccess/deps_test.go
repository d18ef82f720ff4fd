package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/releasetest"
)

// unlinked are the packages the plugin's binary must not link, each with why it left: a path
// ending in "/..." covers the packages under it. One row per package (or tree); a row's
// reason is what the failure prints.
var unlinked = []struct{ path, why string }{
	// It only formatted an image reference (pkg/imageref parses one now); the release and lab
	// code keep it. Measured when it left (fcc075e): 83,963,064 -> 83,856,312 bytes.
	{"github.com/google/go-containerregistry/...", "an image reference is parsed by pkg/imageref"},
	// kubectl's flags come from client-go's clientcmd (internal/cli/kubeflags.go): ConfigFlags
	// linked a disk-cached discovery client, a REST mapper, cli-runtime's resource builder and
	// through it kustomize, whose plugin loader imports Go's plugin package (issue 27).
	{"k8s.io/cli-runtime/pkg/genericclioptions", "kubectl's flags are internal/cli/kubeflags.go over clientcmd"},
	{"k8s.io/cli-runtime/pkg/resource", "no resource builder: the commands read typed lists"},
	{"sigs.k8s.io/kustomize/...", "linked only by cli-runtime's resource builder"},
	{"k8s.io/client-go/restmapper", "no REST mapper: the kinds read are known"},
	{"plugin", "Go's plugin package came with kustomize's plugin loader"},
	// The plugin's client is pkg/kube/client: client-go's clientset, typed group clients and
	// scheme registered about 50 API groups at every start (8 MB of k8s.io/api and 1.3 MB of
	// apply configurations in the binary; issue 27). The adapter over client-go's clientset
	// (pkg/kube/client/clientgo) serves the tests and the lab.
	{"k8s.io/client-go/kubernetes/...", "the plugin's client is pkg/kube/client, over a scheme of the groups it reads"},
	{"k8s.io/client-go/applyconfigurations/...", "the plugin applies nothing"},
	{"k8s.io/client-go/discovery/...", "pkg/kube/client asks /version and /apis itself"},
	{"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo", "the adapter over client-go's clientset is for tests and the lab"},
	// gentype's package holds the fake clients too, and they link client-go/testing, managed
	// fields, structured-merge-diff's typed package and gnostic (pkg/kube/client/typed.go).
	{"k8s.io/client-go/gentype", "pkg/kube/client/typed.go makes gentype's requests without its fakes"},
	{"k8s.io/client-go/testing", "linked only by gentype's fake clients"},
}

// releaseOSes are the systems the release builds for (.goreleaser.yaml's goos).
var releaseOSes = []string{"linux", "darwin", "windows"}

// TestThePluginLinksNoneOfTheHeavyPackages lists the binary's packages as the release builds
// it, for each of its systems, and names every unlinked package found with the chain of
// imports that brings it in.
func TestThePluginLinksNoneOfTheHeavyPackages(t *testing.T) {
	root := releasetest.ModuleRoot(t)
	for _, goos := range releaseOSes {
		t.Run(goos, func(t *testing.T) {
			out := releasetest.Go(t, root, releasetest.GoEnv("GOOS="+goos), "list", "-deps",
				"-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", releasetest.Main)
			imports := map[string][]string{}
			var main string
			for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
				f := strings.Fields(line)
				imports[f[0]] = f[1:]
				main = f[0] // -deps lists the main package last
			}
			require.Contains(t, imports, "k8s.io/client-go/rest", "the list is the binary's packages")
			for pkg := range imports {
				for _, u := range unlinked {
					if covers(u.path, pkg) {
						t.Errorf("the plugin links %s (%s), through %s", pkg, u.why, strings.Join(importChain(imports, main, pkg), " -> "))
					}
				}
			}
		})
	}
}

// covers tells whether pattern (a path, or a tree "path/...") covers pkg.
func covers(pattern, pkg string) bool {
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == tree || strings.HasPrefix(pkg, tree+"/")
	}
	return pkg == pattern
}

// importChain is a shortest chain of imports from main to pkg (breadth first).
func importChain(imports map[string][]string, main, pkg string) []string {
	from := map[string]string{main: ""}
	queue := []string{main}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == pkg {
			chain := []string{}
			for ; p != ""; p = from[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return chain
		}
		for _, next := range imports[p] {
			if _, seen := from[next]; !seen {
				from[next] = p
				queue = append(queue, next)
			}
		}
	}
	return []string{main, "?", pkg}
}

// The table's patterns match as go list's do: a tree covers itself and what is under it, not
// a sibling with the same prefix.
func TestCoversMatchesPathsAndTrees(t *testing.T) {
	assert.True(t, covers("plugin", "plugin"))
	assert.False(t, covers("plugin", "github.com/x/plugin"))
	assert.True(t, covers("sigs.k8s.io/kustomize/...", "sigs.k8s.io/kustomize/api/krusty"))
	assert.True(t, covers("sigs.k8s.io/kustomize/...", "sigs.k8s.io/kustomize"))
	assert.False(t, covers("sigs.k8s.io/kustomize/...", "sigs.k8s.io/kustomizer"))
	chain := importChain(map[string][]string{"m": {"a", "b"}, "a": {"c"}, "b": {}, "c": {"plugin"}}, "m", "plugin")
	assert.Equal(t, []string{"m", "a", "c", "plugin"}, chain)
}
