package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// outcomeText is everything a reader of the outcome sees.
func outcomeText(o engine.Outcome) string {
	parts := make([]string, 0, 1+2*len(o.Findings))
	parts = append(parts, o.Skip)
	for _, f := range o.Findings {
		parts = append(parts, f.Message, fmt.Sprint(f.Evidence))
	}
	return strings.Join(parts, "\n")
}

// Each discovery read a configuration check declares (its catalogue entry) is named in its
// result when it failed: the "not read" notes are derived from the declarations, so a check
// cannot judge silently without a read it relies on.
func TestEachDeclaredReadThatFailedIsNamedInTheResult(t *testing.T) {
	checks := map[string]func(*Env) engine.Check{
		"LA101": AddressConsistency, "LA102": ProxyService, "LA103": DNSService, "LA105": DNSDeployment, "LA107": Audience,
	}
	for id, build := range checks {
		env := configEnv(t, nil, nil)
		ns := env.Setup.DNSService.Namespace
		if id == "LA102" || id == "LA107" {
			ns = env.Setup.ProxyService.Namespace
		}
		keys := catalogue.Get(id).ReadKeys(ns)
		assert.NotEmpty(t, keys, id)
		for _, key := range keys {
			env := configEnv(t, nil, nil)
			env.Setup.Partial[key] = apierrors.NewForbidden(schema.GroupResource{Resource: key}, "", errors.New("RBAC"))
			if key == "nodes" && (id == "LA102" || id == "LA103") {
				// the nodes serve only a Local Service (serviceUnread): a Cluster one is judged
				o := build(env).Run(t.Context())
				assert.NotContains(t, outcomeText(o), "could not read nodes", "%s of a Cluster Service", id)
				svc := env.Setup.ProxyService
				if id == "LA103" {
					svc = env.Setup.DNSService
				}
				svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			}
			o := build(env).Run(t.Context())
			assert.Contains(t, outcomeText(o), "could not read "+key, "%s without %s", id, key)
		}
	}
}
