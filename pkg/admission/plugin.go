package admission

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// DenyServiceExternalIPs is the API server's admission plugin, on per its flags: it refuses
// every new use of externalIPs, a CREATE with any and an UPDATE adding one, and lets through
// an UPDATE whose externalIPs are a subset of the old ones (kubernetes
// plugin/pkg/admission/network/denyserviceexternalips/admission.go Validate, isSubset).
func DenyServiceExternalIPs(source string) Control {
	return Control{What: "the API server's DenyServiceExternalIPs admission plugin (" + source + ")", Enforcing: true,
		Notes: []string{"it refuses every new externalIP, ours included: adding a node address to our Services needs the plugin off for the change"},
		violates: func(r Request) Verdict {
			if len(r.Object.Spec.ExternalIPs) == 0 {
				return allowed("no externalIPs")
			}
			if r.Operation == Create || r.OldObject == nil {
				return denied("a new Service with externalIPs")
			}
			for _, ip := range r.Object.Spec.ExternalIPs {
				if !slices.Contains(r.OldObject.Spec.ExternalIPs, ip) {
					return denied("%s is a new externalIP", ip)
				}
			}
			return allowed("its externalIPs are a subset of the old ones")
		}}
}

// ExternalIPWebhook is externalip-webhook (kubernetes-sigs/externalip-webhook, the CVE's
// reference mitigation): it allows the externalIPs inside its --allowed-external-ip-cidrs, to
// the users and groups of --allowed-usernames and --allowed-groups when set. Those are
// arguments of its Deployment, which are not read: what it lets through cannot be told.
func ExternalIPWebhook(cfg admissionregistrationv1.ValidatingWebhookConfiguration, h admissionregistrationv1.ValidatingWebhook) Control {
	c := Control{What: fmt.Sprintf("ValidatingWebhookConfiguration %s (%s)", cfg.Name, h.Name), Enforcing: true,
		violates: func(r Request) Verdict {
			if len(r.Object.Spec.ExternalIPs) == 0 {
				return allowed("no externalIPs")
			}
			return unknown("it allows the addresses of its --allowed-external-ip-cidrs (to --allowed-usernames/--allowed-groups when set), arguments of its Deployment that are not read")
		}}
	if h.FailurePolicy != nil && *h.FailurePolicy == admissionregistrationv1.Ignore {
		c.Notes = append(c.Notes, "failurePolicy Ignore: bypassed while the webhook is down")
	}
	return c
}

// IsExternalIPWebhook recognises externalip-webhook (and look-alikes): a validating webhook on
// Services whose names say externalip.
func IsExternalIPWebhook(cfg admissionregistrationv1.ValidatingWebhookConfiguration, h admissionregistrationv1.ValidatingWebhook) bool {
	names := strings.ToLower(cfg.Name + " " + h.Name)
	if h.ClientConfig.Service != nil {
		names += " " + strings.ToLower(h.ClientConfig.Service.Name)
	}
	return strings.Contains(names, "externalip") && coversServices(h.Rules)
}
