package podruntime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// kubernetesProviders are Traefik's providers that read the API server: each is given the lab's
// endpoint, the pod's ServiceAccount token and the lab CA, what in a cluster comes from the
// in-cluster configuration (traefik v3.7.9 pkg/provider/kubernetes/crd/kubernetes.go
// newK8sClient: with no KUBERNETES_SERVICE_HOST and no KUBECONFIG, Endpoint, Token and
// CertAuthFilePath; the token is a file or its content, read once at start).
var kubernetesProviders = []string{"kubernetescrd", "kubernetesingress", "kubernetesgateway"}

// TraefikEnv is what the lab gives Traefik that a cluster gives a pod.
type TraefikEnv struct {
	PodIP string
	// Wildcard keeps an entrypoint address without a host as written (a pod of its own); else
	// it is bound on the pod IP (a pod sharing its node's namespace must not take the node's
	// addresses).
	Wildcard  bool
	Endpoint  string // the API server's URL
	TokenFile string // the ServiceAccount token
	CAFile    string // the cluster CA
}

// TraefikArgs is the argv (after the binary) the lab runs for a Traefik container: its own
// command line, the entrypoints bound as the pod's would be, the API server reached as the
// in-cluster configuration would, and no call home (the lab has no internet).
func TraefikArgs(container []string, env TraefikEnv) []string {
	var args []string
	for i, a := range container {
		if i == 0 && !strings.HasPrefix(a, "-") {
			continue // the image's command: traefik
		}
		args = append(args, bindEntrypoint(a, env))
	}
	given := map[string]bool{}
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		given[strings.ToLower(name)] = true
	}
	for _, p := range kubernetesProviders {
		if !enabled(args, "providers."+p) {
			continue
		}
		for _, kv := range [][2]string{{"endpoint", env.Endpoint}, {"token", env.TokenFile}, {"certauthfilepath", env.CAFile}} {
			name := "providers." + p + "." + kv[0]
			if !given[name] {
				args = append(args, "--"+name+"="+kv[1])
			}
		}
	}
	for _, name := range []string{"global.checknewversion", "global.sendanonymoususage"} {
		if !given[name] {
			args = append(args, "--"+name+"=false")
		}
	}
	return args
}

// enabled reports whether a Traefik section such as providers.kubernetescrd is enabled on the
// command line: named alone, =true, or through one of its options.
func enabled(args []string, section string) bool {
	for _, a := range args {
		name, v, hasV := strings.Cut(strings.ToLower(strings.TrimLeft(a, "-")), "=")
		if name == section && (!hasV || v == "true") {
			return true
		}
		if strings.HasPrefix(name, section+".") {
			return true
		}
	}
	return false
}

// bindEntrypoint gives an entrypoint address without a host (":8000/tcp") the pod IP.
func bindEntrypoint(a string, env TraefikEnv) string {
	name, v, ok := strings.Cut(a, "=")
	lower := strings.ToLower(strings.TrimLeft(name, "-"))
	if !ok || env.Wildcard || !strings.HasPrefix(lower, "entrypoints.") || !strings.HasSuffix(lower, ".address") {
		return a
	}
	if strings.Count(lower, ".") != 2 || !strings.HasPrefix(v, ":") {
		return a
	}
	return name + "=" + env.PodIP + v
}

type traefikRunner struct{}

func (traefikRunner) plan(pc *podContext) (*plan, error) {
	tokenFile := filepath.Join(pc.Dir, pc.Container.Name+".token")
	if err := ensureToken(pc, tokenFile); err != nil {
		return nil, err
	}
	resolv, ok := pc.Paths.Resolve("/etc/resolv.conf")
	if !ok {
		return nil, fmt.Errorf("container %s: no resolv.conf", pc.Container.Name)
	}
	args := TraefikArgs(containerArgs(pc.Container), TraefikEnv{PodIP: pc.Pod.Status.PodIP, Wildcard: pc.OwnNamespace,
		Endpoint: pc.Layout.APIServerURL(), TokenFile: tokenFile, CAFile: pc.Layout.CAFile()})
	// The pod's resolv.conf (its dnsPolicy's: the cluster DNS for ClusterFirst) over the node's,
	// in the mount namespace `ip netns exec` made for the process: Traefik asks a forwardAuth
	// address or a backend on its cluster name, as in a cluster.
	argv := append([]string{"sh", "-c", `mount --bind "$0" /etc/resolv.conf && exec "$@"`, resolv, pc.Bins.TraefikBin()}, args...)
	return &plan{
		Argv:     argv,
		Match:    tokenFile,
		OnChange: Restart,
		Applied:  strings.Join(args, "\n"),
	}, nil
}

// ensureToken writes a token of the pod's ServiceAccount once (the kubelet's projected token,
// bound to the pod); Traefik reads it at start only.
func ensureToken(pc *podContext, path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if pc.Token == nil {
		return fmt.Errorf("container %s: no ServiceAccount token source", pc.Container.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tok, err := pc.Token(ctx)
	if err != nil {
		return fmt.Errorf("container %s: ServiceAccount token: %w", pc.Container.Name, err)
	}
	return os.WriteFile(path, tok, 0o600)
}

type forwardAuthRunner struct{}

// plan runs `lab serve-auth` on every declared port of the pod IP, its answers file mapped from
// the container's path to the pod's volume.
func (forwardAuthRunner) plan(pc *podContext) (*plan, error) {
	argv := []string{pc.Layout.LabBinary(), "serve-auth"}
	for _, p := range pc.Container.Ports {
		argv = append(argv, "--listen", fmt.Sprintf("%s:%d", pc.Pod.Status.PodIP, p.ContainerPort))
	}
	if answers, ok := flagValue(containerArgs(pc.Container), "answers"); ok {
		host, raw, err := configFile(pc, answers)
		if err != nil {
			return nil, err
		}
		argv = append(argv, "--answers", host)
		// serve-auth reads the file at each request: a changed ConfigMap needs no restart, but
		// the runtime restarts it so that its log shows the change.
		return &plan{Argv: argv, Match: "serve-auth --listen " + pc.Pod.Status.PodIP, OnChange: Restart, Applied: raw}, nil
	}
	return &plan{Argv: argv, Match: "serve-auth --listen " + pc.Pod.Status.PodIP, OnChange: Restart}, nil
}
