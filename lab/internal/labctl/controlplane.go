package labctl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/binaries"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/pki"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// Process names (pidfiles, logs) of the control plane.
const (
	ProcEtcd       = "etcd"
	ProcAPIServer  = "kube-apiserver"
	ProcController = "kube-controller-manager"
	ProcScheduler  = "kube-scheduler"
)

// etcdURL is only reachable inside the control-plane namespace: nothing else needs etcd.
const etcdURL = "http://127.0.0.1:2379"

func controlPlaneSpecs(l layout.Layout, bins binaries.Set) []procs.Spec {
	p := func(name, ext string) string { return pki.File(l.Path("pki"), name, ext) }
	ns := l.ControlPlane.NS
	return []procs.Spec{
		{Name: ProcEtcd, NS: ns, Argv: []string{bins.EtcdBin(),
			"--name=lab", "--data-dir=" + l.Path("etcd"),
			"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
			"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
			"--initial-cluster=lab=http://127.0.0.1:2380",
			// The data lives on tmpfs and dies with the lab: durability buys nothing here.
			"--unsafe-no-fsync", "--log-level=warn"}},
		{Name: ProcAPIServer, NS: ns, Argv: []string{bins.APIServerBin(),
			"--etcd-servers=" + etcdURL,
			"--bind-address=" + l.ControlPlane.LANIP, "--advertise-address=" + l.ControlPlane.LANIP,
			"--secure-port=" + strconv.Itoa(l.APIServerPort),
			"--tls-cert-file=" + p(pki.APIServer, "crt"), "--tls-private-key-file=" + p(pki.APIServer, "key"),
			"--client-ca-file=" + p(pki.CA, "crt"),
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + p(pki.ServiceAccountKey, "pub"),
			"--service-account-signing-key-file=" + p(pki.ServiceAccountKey, "key"),
			"--authorization-mode=Node,RBAC",
			"--service-cluster-ip-range=" + l.ServiceCIDR,
			"--allow-privileged=true",
			"--kubelet-client-certificate=" + p(pki.APIServerKubelet, "crt"),
			"--kubelet-client-key=" + p(pki.APIServerKubelet, "key"),
			// kwok serves the kubelet API with a certificate from the lab CA: verify it, as a
			// hardened cluster would, so exec really goes to the node it names.
			"--kubelet-certificate-authority=" + p(pki.CA, "crt"),
			"--kubelet-preferred-address-types=InternalIP",
			"--cert-dir=" + l.Path("apiserver"),
			// Requests of one identity only (the benchmark's ServiceAccount) are audited, so
			// `make bench` counts what doctor asked the apiserver, as the server saw it.
			"--audit-policy-file=" + AuditPolicyPath(l), "--audit-log-path=" + AuditLogPath(l),
			"--audit-log-format=json", "--audit-log-maxsize=100", "--audit-log-maxbackup=1",
			"--profiling=false", "--v=1"}},
		{Name: ProcController, NS: ns, Argv: []string{bins.ControllerBin(),
			"--kubeconfig=" + kubeconfigPath(l, pki.ControllerManager),
			"--authentication-kubeconfig=" + kubeconfigPath(l, pki.ControllerManager),
			"--authorization-kubeconfig=" + kubeconfigPath(l, pki.ControllerManager),
			"--bind-address=127.0.0.1",
			"--service-account-private-key-file=" + p(pki.ServiceAccountKey, "key"),
			"--root-ca-file=" + p(pki.CA, "crt"),
			"--cluster-signing-cert-file=" + p(pki.CA, "crt"), "--cluster-signing-key-file=" + p(pki.CA, "key"),
			"--use-service-account-credentials=true",
			"--service-cluster-ip-range=" + l.ServiceCIDR,
			// A node whose link is cut becomes NotReady within 20 s instead of 40 s, so tests of
			// a dead node do not wait long.
			"--node-monitor-grace-period=20s",
			"--leader-elect=false", "--v=1"}},
		{Name: ProcScheduler, NS: ns, Argv: []string{bins.SchedulerBin(),
			"--kubeconfig=" + kubeconfigPath(l, pki.Scheduler),
			"--authentication-kubeconfig=" + kubeconfigPath(l, pki.Scheduler),
			"--authorization-kubeconfig=" + kubeconfigPath(l, pki.Scheduler),
			"--bind-address=127.0.0.1", "--leader-elect=false", "--v=1"}},
	}
}

// AuditedServiceAccount is the one identity whose requests the lab's apiserver audits: the
// ServiceAccount lab-rbac/lanaccess-bench the benchmark runs doctor as.
const (
	AuditedServiceAccountNamespace = "lab-rbac"
	AuditedServiceAccount          = "lanaccess-bench"
)

// auditPolicy records, once complete, every request of the audited ServiceAccount (verb, URI,
// user agent, code) and nothing else: the lab's own traffic stays out of the file.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: ["system:serviceaccount:` + AuditedServiceAccountNamespace + `:` + AuditedServiceAccount + `"]
- level: None
`

// AuditPolicyPath and AuditLogPath are the apiserver's audit policy and JSON-lines log.
func AuditPolicyPath(l layout.Layout) string { return l.Path("apiserver", "audit-policy.yaml") }
func AuditLogPath(l layout.Layout) string    { return l.Path("logs", "audit.log") }

func writeAuditPolicy(l layout.Layout) error {
	if err := os.MkdirAll(l.Path("apiserver"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(AuditPolicyPath(l), []byte(auditPolicy), 0o600)
}

func kubeconfigPath(l layout.Layout, identity string) string {
	return l.Path("kubeconfigs", identity+".kubeconfig")
}

// writeKubeconfigs writes the admin kubeconfig (the one users and tests get) and one per
// control-plane and kwok identity.
func writeKubeconfigs(l layout.Layout) error {
	dir := l.Path("pki")
	ca, err := pki.Load(dir, pki.CA)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.Path("kubeconfigs"), 0o755); err != nil {
		return err
	}
	ids := []string{pki.Admin, pki.ControllerManager, pki.Scheduler, pki.KubeProxy}
	for _, n := range l.Nodes {
		ids = append(ids, pki.KwokClient(n.NS))
	}
	for _, id := range ids {
		pair, err := pki.Load(dir, id)
		if err != nil {
			return err
		}
		if err := pki.WriteKubeconfig(kubeconfigPath(l, id), l.APIServerURL(), ca, pair); err != nil {
			return err
		}
	}
	admin, err := pki.Load(dir, pki.Admin)
	if err != nil {
		return err
	}
	return pki.WriteKubeconfig(l.AdminKubeconfig(), l.APIServerURL(), ca, admin)
}

// waitAPIServer polls /readyz with the admin identity until it answers 200; it gives up at
// once if the apiserver or etcd process has exited (the log tail says why).
func waitAPIServer(ctx context.Context, l layout.Layout, timeout time.Duration) error {
	dir := l.Path("pki")
	ca, err := os.ReadFile(pki.File(dir, pki.CA, "crt"))
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(pki.File(dir, pki.Admin, "crt"), pki.File(dir, pki.Admin, "key"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}},
	}
	deadline := time.Now().Add(timeout)
	var last error
	mgr := Procs(l)
	gone := map[string]int{}
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, name := range []string{ProcEtcd, ProcAPIServer} {
			if _, err := os.Stat(mgr.PidFile(name)); err != nil {
				continue // not started by us in this call (Healthy checks processes itself)
			}
			// Seen gone on three polls in a row: a process caught in the middle of exec (ip netns
			// exec replacing itself) shows an empty /proc/PID/cmdline for an instant.
			if _, ok := mgr.Pid(name, l.StateDir); !ok {
				gone[name]++
				if gone[name] >= 3 {
					return fmt.Errorf("%s exited: %s", name, logTail(mgr.LogFile(name), 3))
				}
				continue
			}
			gone[name] = 0
		}
		resp, err := client.Get(l.APIServerURL() + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("readyz answered %s", resp.Status)
		}
		last = err
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("kube-apiserver at %s not ready after %s: %v (log: %s)", l.APIServerURL(), timeout, last, l.Path("logs", ProcAPIServer+".log"))
}

// logTail returns the last n lines of a log file, for error messages.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n(log: " + path + ")"
}
