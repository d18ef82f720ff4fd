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
// kubernetes-crd-definition-v1.yml), and the Gateway API's standard channel at the version
// Traefik requires (component gateway-api), then waits until the API server serves
// Middlewares (manifests/base holds one) and HTTPRoutes. Without the Gateway API's CRDs, a
// Traefik run with --providers.kubernetesgateway never syncs its informers.
func applyTraefikCRDs(ctx context.Context, a *Applier, bins binaries.Set) error {
	if bins.GatewayAPI == "" {
		return fmt.Errorf("the lab's state names no Gateway API CRDs: bring the lab down and up again")
	}
	for _, dir := range []string{bins.TraefikCRDs(), bins.GatewayAPICRDs()} {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return err
		}
		if len(files) == 0 {
			return fmt.Errorf("no CRDs in %s: rebuild it with lab/build.sh", dir)
		}
		sort.Strings(files)
		for _, f := range files {
			if err := a.ApplyFile(ctx, f); err != nil {
				return err
			}
		}
	}
	served := []schema.GroupVersionKind{
		{Group: "traefik.io", Version: "v1alpha1", Kind: "Middleware"},
		{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"},
	}
	return waitFor(ctx, "Traefik's and the Gateway API's CRDs served", 30*time.Second, func(context.Context) error {
		if r, ok := a.mapper.(meta.ResettableRESTMapper); ok {
			r.Reset()
		}
		for _, gvk := range served {
			if _, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				return err
			}
		}
		return nil
	})
}
