package pki

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ClusterName is the cluster and context name in every lab kubeconfig.
const ClusterName = "lanaccess-lab"

// WriteKubeconfig writes a self-contained kubeconfig (certificates embedded) for a client
// certificate identity.
func WriteKubeconfig(path, server string, ca, client *Pair) error {
	return write(path, server, ca, &clientcmdapi.AuthInfo{
		ClientCertificateData: client.CertPEM,
		ClientKeyData:         client.KeyPEM,
	})
}

// WriteTokenKubeconfig writes a kubeconfig for a bearer token (a ServiceAccount).
func WriteTokenKubeconfig(path, server string, ca *Pair, token string) error {
	return write(path, server, ca, &clientcmdapi.AuthInfo{Token: token})
}

// TokenKubeconfig returns the bytes of a token kubeconfig (for Secrets).
func TokenKubeconfig(server string, ca *Pair, token string) ([]byte, error) {
	return clientcmd.Write(*config(server, ca, &clientcmdapi.AuthInfo{Token: token}))
}

func write(path, server string, ca *Pair, auth *clientcmdapi.AuthInfo) error {
	if err := clientcmd.WriteToFile(*config(server, ca, auth), path); err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return nil
}

func config(server string, ca *Pair, auth *clientcmdapi.AuthInfo) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[ClusterName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca.CertPEM}
	cfg.AuthInfos["user"] = auth
	cfg.Contexts[ClusterName] = &clientcmdapi.Context{Cluster: ClusterName, AuthInfo: "user", Namespace: "default"}
	cfg.CurrentContext = ClusterName
	return cfg
}
