package pki

import (
	"fmt"
	"path/filepath"
	"time"
)

// Names of the pairs the lab writes in its pki directory.
const (
	CA                = "ca"
	ServiceAccountKey = "sa"
	APIServer         = "apiserver"
	APIServerKubelet  = "apiserver-kubelet-client"
	Admin             = "admin"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	KubeProxy         = "kube-proxy"
	AppsWildcard      = "apps-wildcard"
	WrongHost         = "wrong-host"
	Expired           = "expired"
	UnknownCA         = "unknown-ca"
	OpenVPNServer     = "openvpn-server"
	OpenVPNClient     = "openvpn-laptop"
)

// KwokClient and KwokServing name each node's kwok identities.
func KwokClient(node string) string  { return "kwok-" + node }
func KwokServing(node string) string { return "kubelet-" + node }

// Addresses the lab certificates must name.
type Addresses struct {
	APIServerIP   string   // lab address of the apiserver
	KubernetesVIP string   // first address of the service range (kubernetes.default)
	Nodes         []NodeIP // kubelet serving certificates
	AppsZone      string   // apps.example.com
}

// NodeIP is a node name and its address.
type NodeIP struct{ Name, IP string }

// GenerateLab writes every certificate of the lab into dir: control plane identities, kubelet
// (kwok) certificates, the application wildcard, and the wrong certificates used by faults.
func GenerateLab(dir string, a Addresses) error {
	ca, err := NewCA("kubectl-lanaccess lab CA")
	if err != nil {
		return err
	}
	if err := ca.Write(dir, CA); err != nil {
		return err
	}
	// The service-account signing key is a bare key; a self-signed pair gives us one in PEM.
	sa, err := SelfSigned(Spec{CommonName: "service-accounts"})
	if err != nil {
		return err
	}
	if err := sa.Write(dir, ServiceAccountKey); err != nil {
		return err
	}
	if err := sa.WritePublicKey(dir, ServiceAccountKey); err != nil {
		return err
	}
	specs := map[string]Spec{
		APIServer: {CommonName: "kube-apiserver", Server: true,
			IPs:      []string{a.APIServerIP, a.KubernetesVIP, "127.0.0.1"},
			DNSNames: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}},
		APIServerKubelet:  {CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}, Client: true},
		Admin:             {CommonName: "lab-admin", Organization: []string{"system:masters"}, Client: true},
		ControllerManager: {CommonName: "system:kube-controller-manager", Client: true},
		Scheduler:         {CommonName: "system:kube-scheduler", Client: true},
		// The user the bootstrap ClusterRoleBinding system:node-proxier names (kubernetes
		// plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go: user.KubeProxy): what a
		// kube-proxy may read and nothing more, as on a kubeadm or k3s node.
		KubeProxy:    {CommonName: "system:kube-proxy", Client: true},
		AppsWildcard: {CommonName: "*." + a.AppsZone, DNSNames: []string{"*." + a.AppsZone, a.AppsZone}, Server: true},
		WrongHost:    {CommonName: "wrong.example.net", DNSNames: []string{"wrong.example.net"}, Server: true},
		Expired: {CommonName: "*." + a.AppsZone, DNSNames: []string{"*." + a.AppsZone}, Server: true,
			NotBefore: time.Now().Add(-60 * 24 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)},
		OpenVPNServer: {CommonName: "openvpn-server", Server: true},
		OpenVPNClient: {CommonName: "laptop", Client: true},
	}
	for _, n := range a.Nodes {
		// kwok acts for the node; it is put in system:masters because it also writes pod status
		// for pods it does not "own" in the Node authorizer's sense during start-up.
		specs[KwokClient(n.Name)] = Spec{CommonName: "lab:kwok:" + n.Name, Organization: []string{"system:masters"}, Client: true}
		specs[KwokServing(n.Name)] = Spec{CommonName: n.Name, IPs: []string{n.IP}, DNSNames: []string{n.Name}, Server: true}
	}
	for name, spec := range specs {
		p, err := ca.Issue(spec)
		if err != nil {
			return err
		}
		if err := p.Write(dir, name); err != nil {
			return err
		}
	}
	// Self-signed: a chain nobody trusts (the real Traefik makes its own default certificate).
	for name, spec := range map[string]Spec{
		UnknownCA: {CommonName: "*." + a.AppsZone, DNSNames: []string{"*." + a.AppsZone}, Server: true},
	} {
		p, err := SelfSigned(spec)
		if err != nil {
			return err
		}
		if err := p.Write(dir, name); err != nil {
			return err
		}
	}
	return nil
}

// File returns the path of a pair's certificate or key ("crt" or "key").
func File(dir, name, ext string) string { return filepath.Join(dir, fmt.Sprintf("%s.%s", name, ext)) }
