// Package binaries finds the lab's pinned binaries by running lab/build.sh, which builds what
// is missing into a cache keyed by version and prints one "name=dir" line per component.
package binaries

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Set is the directory of each component.
type Set struct {
	Etcd       string `json:"etcd"`
	Kubernetes string `json:"kubernetes"`
	Kwok       string `json:"kwok"`
	CoreDNS    string `json:"coredns"`
	Traefik    string `json:"traefik"`
	// CNIPlugins holds the reference CNI plugins (ptp, host-local, loopback, portmap, tuning).
	CNIPlugins string `json:"cniPlugins"`
	// GatewayAPI holds the Gateway API's CRDs (standard channel) at the version Traefik requires.
	GatewayAPI string `json:"gatewayAPI"`
	// KubeNetworkPolicies holds the NetworkPolicy enforcer and its module's install.yaml.
	KubeNetworkPolicies string `json:"kubeNetworkPolicies"`
}

func (s Set) EtcdBin() string       { return filepath.Join(s.Etcd, "etcd") }
func (s Set) APIServerBin() string  { return filepath.Join(s.Kubernetes, "kube-apiserver") }
func (s Set) ControllerBin() string { return filepath.Join(s.Kubernetes, "kube-controller-manager") }
func (s Set) SchedulerBin() string  { return filepath.Join(s.Kubernetes, "kube-scheduler") }
func (s Set) KubeProxyBin() string  { return filepath.Join(s.Kubernetes, "kube-proxy") }
func (s Set) KubectlBin() string    { return filepath.Join(s.Kubernetes, "kubectl") }
func (s Set) KwokBin() string       { return filepath.Join(s.Kwok, "kwok") }
func (s Set) KwokStagesDir() string { return filepath.Join(s.Kwok, "stages") }
func (s Set) CoreDNSBin() string    { return filepath.Join(s.CoreDNS, "coredns") }
func (s Set) TraefikBin() string    { return filepath.Join(s.Traefik, "traefik") }

// KubeNetworkPoliciesBin is the NetworkPolicy enforcer (sigs.k8s.io/kube-network-policies/cmd).
func (s Set) KubeNetworkPoliciesBin() string {
	return filepath.Join(s.KubeNetworkPolicies, "kube-network-policies")
}

// KubeNetworkPoliciesManifest is the enforcer's install.yaml, from the module it was built from.
func (s Set) KubeNetworkPoliciesManifest() string {
	return filepath.Join(s.KubeNetworkPolicies, "install.yaml")
}

// TraefikCRDs is the directory of Traefik's CRDs, shipped with its binary from the module it
// was built from.
func (s Set) TraefikCRDs() string { return filepath.Join(s.Traefik, "crds") }

// GatewayAPICRDs is the directory of the Gateway API's CRDs Traefik's kubernetesgateway
// provider reads.
func (s Set) GatewayAPICRDs() string { return filepath.Join(s.GatewayAPI, "crds") }

// Build runs build.sh (a no-op when everything is cached); its progress goes to progress.
func Build(ctx context.Context, labDir string, progress io.Writer) (Set, error) {
	script := filepath.Join(labDir, "build.sh")
	cmd := exec.CommandContext(ctx, "bash", script, "all")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = progress
	if err := cmd.Run(); err != nil {
		return Set{}, fmt.Errorf("%s: %w", script, err)
	}
	return Parse(out.String())
}

// Parse reads build.sh's "name=dir" lines.
func Parse(out string) (Set, error) {
	var s Set
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		name, dir, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok {
			continue
		}
		switch name {
		case "etcd":
			s.Etcd = dir
		case "kubernetes":
			s.Kubernetes = dir
		case "kwok":
			s.Kwok = dir
		case "coredns":
			s.CoreDNS = dir
		case "traefik":
			s.Traefik = dir
		case "cni-plugins":
			s.CNIPlugins = dir
		case "gateway-api":
			s.GatewayAPI = dir
		case "kube-network-policies":
			s.KubeNetworkPolicies = dir
		}
	}
	var missing []string
	for name, dir := range map[string]string{"etcd": s.Etcd, "kubernetes": s.Kubernetes, "kwok": s.Kwok, "coredns": s.CoreDNS, "traefik": s.Traefik, "cni-plugins": s.CNIPlugins,
		"gateway-api": s.GatewayAPI, "kube-network-policies": s.KubeNetworkPolicies} {
		if dir == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return s, fmt.Errorf("build.sh did not report: %s", strings.Join(missing, ", "))
	}
	return s, nil
}

// LabDir finds the repository's lab/ directory: $LAB_DIR, else upwards from the working
// directory, else next to this source file (go run / go test keep source paths).
func LabDir() (string, error) {
	if d := os.Getenv("LAB_DIR"); d != "" {
		return d, nil
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "lab", "build.sh")); err == nil {
				return filepath.Join(d, "lab"), nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		d := filepath.Join(filepath.Dir(file), "..", "..")
		if _, err := os.Stat(filepath.Join(d, "build.sh")); err == nil {
			return filepath.Clean(d), nil
		}
	}
	return "", errors.New("cannot find lab/build.sh: run from the repository or set LAB_DIR")
}
