package labctl

import (
	"context"
	"fmt"
	"os"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/pki"
)

// Secrets the manifests reference and the lab fills from its PKI.
const (
	AppsTLSSecretNamespace = "monitoring"
	AppsTLSSecretName      = "apps-wildcard-tls" //nolint:gosec // G101: the name of a Secret, not a credential
)

// tokenLifetime matches the certificates' validity: the lab never lives that long.
const tokenLifetime = int64(pki.Validity / 1e9)

// createSecrets writes the Secrets that hold lab credentials: the cluster DNS's kubeconfig (a
// token of its own ServiceAccount, so RBAC applies to it), the wildcard TLS certificate of the
// apps zone, and the OpenVPN server's PKI.
func createSecrets(ctx context.Context, c kubernetes.Interface, l layout.Layout) error {
	dir := l.Path("pki")
	ca, err := pki.Load(dir, pki.CA)
	if err != nil {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"}}
	if _, err := c.CoreV1().ServiceAccounts("kube-system").Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("serviceaccount kube-system/coredns: %w", err)
	}
	exp := tokenLifetime
	tok, err := c.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, "coredns",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for kube-system/coredns: %w", err)
	}
	kubeconfig, err := pki.TokenKubeconfig(l.APIServerURL(), ca, tok.Status.Token)
	if err != nil {
		return err
	}
	wild, err := pki.Load(dir, pki.AppsWildcard)
	if err != nil {
		return err
	}
	server, err := pki.Load(dir, pki.OpenVPNServer)
	if err != nil {
		return err
	}
	secrets := []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "coredns-kubeconfig", Namespace: "kube-system"},
			Data: map[string][]byte{"kubeconfig": kubeconfig}},
		{ObjectMeta: metav1.ObjectMeta{Name: AppsTLSSecretName, Namespace: AppsTLSSecretNamespace},
			Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: wild.CertPEM, corev1.TLSPrivateKeyKey: wild.KeyPEM}},
		{ObjectMeta: metav1.ObjectMeta{Name: "openvpn-pki", Namespace: "vpn"},
			Data: map[string][]byte{"ca.crt": ca.CertPEM, "server.crt": server.CertPEM, "server.key": server.KeyPEM}},
	}
	for _, s := range secrets {
		if err := upsertSecret(ctx, c, s); err != nil {
			return err
		}
	}
	return nil
}

func upsertSecret(ctx context.Context, c kubernetes.Interface, s *corev1.Secret) error {
	_, err := c.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = c.CoreV1().Secrets(s.Namespace).Update(ctx, s, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// copyFile copies src to dst with mode (the lab binary into the state dir).
func copyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil { //nolint:gosec // G703: dst is the lab's own state path (layout), chosen by whoever runs the lab
		return err
	}
	return os.Rename(tmp, dst)
}
