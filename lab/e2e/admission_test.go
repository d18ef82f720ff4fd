//go:build lab

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The ValidatingAdmissionPolicy LA106 suggests, proven on the lab's real kube-apiserver: the
// printed remediation is pasted into a shell as a user would, the API server admits it (its CEL
// map holds a commented-out line), then refuses a Service of another namespace claiming one of
// our addresses and admits an update of our own Services. The VPN Service (vpn/openvpn, whose
// externalIPs are node-vpn's address) is outside the setup: its allow line is commented out,
// so its next update is refused (no exemption on UPDATE) until the operator uncomments the line
// and applies the policy again, which the test does.
func TestLA106SuggestedPolicyIsAdmittedAndReservesOurAddressesOnTheRealAPIServer(t *testing.T) {
	ctx := context.Background()
	r := doctor(t, "--only", "LA106", "--no-helpers")
	c := r.check(t, "LA106")
	require.Equal(t, "warn", c.Status, "the lab has no admission control for externalIPs: %+v", c.Findings)
	var fix string
	for _, f := range c.Findings {
		if f.Object == "admission control (CVE-2020-8554)" && strings.Contains(f.Remediation, "kind: ValidatingAdmissionPolicy") {
			fix = f.Remediation
		}
	}
	require.NotEmpty(t, fix, "LA106 suggests a policy: %+v", c.Findings)
	vpnLine := `// "vpn/openvpn": ["10.0.10.14"],`
	require.Contains(t, fix, vpnLine, "the VPN Service's allow line, for the operator to choose")

	// Paste it: kubectl from the lab's build on PATH, the lab's kubeconfig.
	pasteKubectl(t, fix)
	dryRun := []string{metav1.DryRunAll}
	intruder := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "intercept", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			ExternalIPs: []string{"10.0.10.12"},
			Ports:       []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443)}},
			Selector:    map[string]string{"app": "nothing"},
		},
	}
	t.Cleanup(func() {
		cleanup, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = lab.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(cleanup, "restrict-service-externalips", metav1.DeleteOptions{})
		_ = lab.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(cleanup, "restrict-service-externalips", metav1.DeleteOptions{})
		// The API server drops the policy from its cache a moment later: leave the lab only
		// once a claim is admitted again, for the tests that follow.
		eventually(t, 30*time.Second, func() error {
			_, err := lab.Client.CoreV1().Services("default").Create(cleanup, intruder, metav1.CreateOptions{DryRun: dryRun})
			return err
		})
	})

	// A foreign claim on 10.0.10.12:443 is refused once the API server has loaded the policy
	// (its policy informer syncs within seconds). Dry runs: admission runs, nothing is stored.
	eventually(t, 30*time.Second, func() error {
		_, err := lab.Client.CoreV1().Services("default").Create(ctx, intruder, metav1.CreateOptions{DryRun: dryRun})
		if err == nil {
			return errorf("the foreign claim was admitted")
		}
		if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
			return errorf("unexpected refusal: %v", err)
		}
		return nil
	})
	_, err := lab.Client.CoreV1().Services("default").Create(ctx, intruder, metav1.CreateOptions{DryRun: dryRun})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "restrict-service-externalips")

	// The same Service without externalIPs is admitted: the refusal is about the addresses.
	plain := intruder.DeepCopy()
	plain.Spec.ExternalIPs = nil
	_, err = lab.Client.CoreV1().Services("default").Create(ctx, plain, metav1.CreateOptions{DryRun: dryRun})
	require.NoError(t, err)

	// Updates of our Services are admitted (a label, as a helm upgrade writes; the dry run
	// stores nothing); the VPN Service's is refused while its line is commented out.
	update := func(ns, name string) error {
		svc, err := lab.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		if svc.Labels == nil {
			svc.Labels = map[string]string{}
		}
		svc.Labels["lanaccess.io/upgrade"] = "1"
		_, err = lab.Client.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{DryRun: dryRun})
		return err
	}
	for _, ref := range [][2]string{{"traefik", "traefik"}, {"traefik", "lan-dns"}} {
		assert.NoError(t, update(ref[0], ref[1]), "the update of %s/%s", ref[0], ref[1])
	}
	assert.Error(t, update("vpn", "openvpn"), "the VPN Service is left to the operator")

	// The operator chooses to keep the VPN Service: uncomment its line, apply again.
	chosen := strings.Replace(fix, vpnLine, `"vpn/openvpn": ["10.0.10.14"],`, 1)
	pasteKubectl(t, chosen)
	eventually(t, 30*time.Second, func() error { return update("vpn", "openvpn") })

	// Moving one of ours onto another address is refused: each keeps its own addresses.
	svc, err := lab.Client.CoreV1().Services("traefik").Get(ctx, "traefik", metav1.GetOptions{})
	require.NoError(t, err)
	svc.Spec.ExternalIPs = append(svc.Spec.ExternalIPs, "10.0.10.14")
	_, err = lab.Client.CoreV1().Services("traefik").Update(ctx, svc, metav1.UpdateOptions{DryRun: dryRun})
	assert.Error(t, err, "traefik/traefik may not take the VPN's address")

	// And doctor now sees the protection.
	r = doctor(t, "--only", "LA106", "--no-helpers")
	c = r.check(t, "LA106")
	assert.Equal(t, "pass", c.Status, "%+v", c.Findings)
	assert.True(t, c.mentions("info", "refuses a Service of another namespace claiming our addresses"), "%+v", c.Findings)
}
