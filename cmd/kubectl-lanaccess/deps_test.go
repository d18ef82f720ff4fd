package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lanaccess/kubectl-lanaccess/internal/releasetest"
)

// The plugin's binary links no go-containerregistry: it only formatted an image reference
// (pkg/imageref parses one now); the release and lab code keep it. Measured when it left
// (fcc075e): 83,963,064 -> 83,856,312 bytes with the release's -s -w -trimpath.
func TestThePluginLinksNoContainerRegistryLibrary(t *testing.T) {
	root := releasetest.ModuleRoot(t)
	deps := releasetest.Go(t, root, releasetest.GoEnv(), "list", "-deps", releasetest.Main)
	assert.Contains(t, deps, "k8s.io/client-go/rest\n", "the list is the binary's packages")
	for pkg := range strings.SplitSeq(deps, "\n") {
		assert.NotContains(t, pkg, "github.com/google/go-containerregistry", "the plugin links %s", pkg)
	}
}
