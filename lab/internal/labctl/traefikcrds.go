package labctl

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/binaries"
)

// applyTraefikCRDs applies the CRDs that lab/build.sh ships with the lab's Traefik, taken from
// the module it was built from (docs/content/reference/dynamic-configuration
// kubernetes-crd-definition-v1.yml), and waits until the API server serves Middlewares:
// manifests/base holds one.
func applyTraefikCRDs(ctx context.Context, a *Applier, bins binaries.Set) error {
	files, err := filepath.Glob(filepath.Join(bins.TraefikCRDs(), "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRDs in %s: rebuild it with lab/build.sh traefik", bins.TraefikCRDs())
	}
	sort.Strings(files)
	for _, f := range files {
		if err := a.ApplyFile(ctx, f); err != nil {
			return err
		}
	}
	gk := schema.GroupKind{Group: "traefik.io", Kind: "Middleware"}
	return waitFor(ctx, "Traefik's CRDs served", 30*time.Second, func(context.Context) error {
		if r, ok := a.mapper.(meta.ResettableRESTMapper); ok {
			r.Reset()
		}
		_, err := a.mapper.RESTMapping(gk, "v1alpha1")
		return err
	})
}
