package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/binaries"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/daemon"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/labctl"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/podruntime"
)

// The zone DNS's real-world shapes (issue 13), each a set of manifests under
// lab/manifests/variants applied over the seed's traefik/lan-dns:
//   - dot-block: the zone served by zone-scoped templates inside the `.` block (the template
//     plugin's README pattern);
//   - import: k3s's pattern, the zone block in a second ConfigMap (coredns-custom, key
//     lan.server) mounted at /etc/coredns/custom and imported by the Corefile;
//   - import-twice: import, plus the same zone block in the Corefile beside the import:
//     CoreDNS refuses it (a pod that starts now crashes; a running one keeps its last config).
var lanDNSVariantFiles = map[string][]string{
	"dot-block":    {"lan-dns-dot-block"},
	"import":       {"lan-dns-import"},
	"import-twice": {"lan-dns-import-twice"},
}

// LanDNSVariants names the variants ApplyLanDNSVariant knows, "seed" being the base manifest.
func LanDNSVariants() []string { return []string{"seed", "dot-block", "import", "import-twice"} }

// lanDNSBase is the seed's manifest of the zone DNS.
const lanDNSBase = "30-lan-dns"

// customConfigMap is the second ConfigMap of the import variants.
const customConfigMap = "coredns-custom"

// ApplyLanDNSVariant puts traefik/lan-dns in the shape name (see LanDNSVariants; "seed"
// restores the base manifest and deletes what the variants add) and waits until the Deployment
// rolled out and the pod runtime wrote the ConfigMaps into the pods (CoreDNS reloaded them).
// import-twice cannot roll out healthy pods; a running pod keeps serving the import variant.
func (f Lab) ApplyLanDNSVariant(ctx context.Context, name string) error {
	dir, err := binaries.LabDir()
	if err != nil {
		return err
	}
	if name == "import-twice" {
		// Over a healthy import variant (rolled out, pods mounting coredns-custom): running
		// pods then refuse the reload, and a pod that starts crashes.
		if err := f.ApplyLanDNSVariant(ctx, "import"); err != nil {
			return err
		}
	}
	var paths []string
	if name == "seed" {
		paths = []string{filepath.Join(dir, "manifests", "base", lanDNSBase+".yaml")}
	} else {
		files, ok := lanDNSVariantFiles[name]
		if !ok {
			return fmt.Errorf("lan-dns variant %q: want one of %v", name, LanDNSVariants())
		}
		for _, f := range files {
			paths = append(paths, filepath.Join(dir, "manifests", "variants", f+".yaml"))
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.Layout.AdminKubeconfig())
	if err != nil {
		return err
	}
	a, err := labctl.NewApplier(cfg)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := a.ApplyFile(ctx, p); err != nil {
			return err
		}
	}
	if name == "seed" {
		err := f.Client.CoreV1().ConfigMaps("traefik").Delete(ctx, customConfigMap, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if name != "import-twice" {
		if err := f.WaitRollout(ctx, "traefik", "lan-dns"); err != nil {
			return err
		}
	}
	return f.waitConfigMapsSynced(ctx, "traefik")
}

// waitConfigMapsSynced waits until the pod runtime acted on the newest ConfigMap of namespace.
func (f Lab) waitConfigMapsSynced(ctx context.Context, namespace string) error {
	list, err := f.Client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var newest uint64
	for _, cm := range list.Items {
		if v, err := strconv.ParseUint(cm.ResourceVersion, 10, 64); err == nil && v > newest {
			newest = v
		}
	}
	if newest == 0 {
		return nil
	}
	return f.WaitSynced(ctx, daemon.SyncRuntime, "configmaps", strconv.FormatUint(newest, 10))
}

// ContainerLog is what a container the lab runs for a pod wrote to stdout and stderr (the
// pod runtime keeps it in the pod's directory, like the kubelet's container log).
func (f Lab) ContainerLog(ctx context.Context, namespace, pod, container string) (string, error) {
	p, err := f.Client.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	dir := filepath.Join(f.Layout.PodsDir(), podruntime.PodDirName(p))
	b, err := os.ReadFile(filepath.Join(dir, container+".log"))
	if err != nil {
		return "", fmt.Errorf("log of %s/%s container %s: %w", namespace, pod, container, err)
	}
	return string(b), nil
}
